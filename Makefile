# tfk8s — TensorFlow on Kubernetes.
#
# make help lists the targets, one line each: the "## " comment beside each target,
# which make verify requires of every target.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)
# Every go command here compiles without DWARF: tools are linked with -s -w, tfk8s's
# images too, and tests read none; the compiler spends 14% less CPU without it. The go
# commands that build run as $(GO), with GOGC=400: the compiler collects garbage less
# often, for 20% less CPU at 0.5 GB per compile at most (measured on client-go: 227 → 154
# CPU-s together). go test runs as plain go: its test binaries would inherit GOGC.
export GOFLAGS ?= -buildvcs=false -gcflags=all=-dwarf=false
GO := GOGC=400 go

# Versions of the tools built from the Go module proxy. Each binary is rebuilt only when
# its stamp, bin/.stamp/<name>-<version>, is missing.
KUBE_VERSION := v1.37.2
ETCD_VERSION := v3.7.0
CONTROLLER_GEN_VERSION := v0.21.0
STATICCHECK_VERSION := v0.8.2
VERSITYGW_VERSION := v1.8.0
COREDNS_VERSION := v1.14.7
DISTRIBUTION_VERSION := v3.1.2
KUEUE_VERSION := v0.19.2
PROMETHEUS_OPERATOR_VERSION := v0.85.0
PROMETHEUS_VERSION := v0.316.0
METRICS_SERVER_VERSION := v0.8.0
CONTAINERD_VERSION := v2.4.2
CNI_PLUGINS_VERSION := v1.10.0
TRAINING_OPERATOR_VERSION := v1.9.4
CRD_REF_DOCS_VERSION := v0.3.0

STAMP := $(BIN)/.stamp
KUBE_STAMP := $(STAMP)/kube-$(KUBE_VERSION)
ETCD_STAMP := $(STAMP)/etcd-$(ETCD_VERSION)
CONTROLLER_GEN_STAMP := $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK_STAMP := $(STAMP)/staticcheck-$(STATICCHECK_VERSION)
VERSITYGW_STAMP := $(STAMP)/versitygw-$(VERSITYGW_VERSION)
COREDNS_STAMP := $(STAMP)/coredns-$(COREDNS_VERSION)
DISTRIBUTION_STAMP := $(STAMP)/registry-$(DISTRIBUTION_VERSION)
KUEUE_STAMP := $(STAMP)/kueue-$(KUEUE_VERSION)
PROMETHEUS_OPERATOR_STAMP := $(STAMP)/prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)
PROMETHEUS_STAMP := $(STAMP)/prometheus-server-$(PROMETHEUS_VERSION)
METRICS_SERVER_STAMP := $(STAMP)/metrics-server-$(METRICS_SERVER_VERSION)
KUBELET_STAMP := $(STAMP)/kubelet-$(KUBE_VERSION)
CONTAINERD_STAMP := $(STAMP)/containerd-$(CONTAINERD_VERSION)
CNI_PLUGINS_STAMP := $(STAMP)/cni-plugins-$(CNI_PLUGINS_VERSION)
DRA_DRIVER_STAMP := $(STAMP)/dra-test-driver-$(KUBE_VERSION)
TRAINING_OPERATOR_STAMP := $(STAMP)/training-operator-$(TRAINING_OPERATOR_VERSION)
CRD_REF_DOCS_STAMP := $(STAMP)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
CLUSTER_STAMPS := $(KUBE_STAMP) $(ETCD_STAMP) $(COREDNS_STAMP) $(KUBELET_STAMP) $(CONTAINERD_STAMP) $(CNI_PLUGINS_STAMP)

# Tools are linked without a symbol table or DWARF: quicker to link, 30% smaller.
TOOL_LDFLAGS := -s -w
# $(call kube_ldflags,vX.Y.Z) stamps a Kubernetes binary with its version.
kube_ldflags = -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(1))) \
	-X k8s.io/component-base/version.gitTreeState=clean
KUBE_LDFLAGS := $(call kube_ldflags,$(KUBE_VERSION))

# $(call go_tool,NAME,PACKAGE[,LDFLAGS]) is the recipe of a tool built from its pinning
# module, hack/tools/NAME, into bin/NAME; $(call stamp,NAME) then replaces the stamp of
# the version built before with $@. A new tool is a version, a stamp and this rule:
#   $(NAME_STAMP): hack/tools/NAME/go.mod
#   	$(call go_tool,NAME,example.com/cmd/name)
#   	$(call stamp,NAME)
go_tool = cd hack/tools/$(1) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(strip $(TOOL_LDFLAGS) $(3))" -o $(BIN)/$(1) $(2)
stamp = mkdir -p $(STAMP) && rm -f $(STAMP)/$(1)-* && touch $@

TEST_TOOLS := $(CLUSTER_STAMPS) $(VERSITYGW_STAMP) $(DISTRIBUTION_STAMP) $(KUEUE_STAMP) $(PROMETHEUS_OPERATOR_STAMP) $(PROMETHEUS_STAMP) $(METRICS_SERVER_STAMP)

# The node of local mode; the kubelet, kube-proxy, containerd and the CNI plugins come
# with the cluster's build.
NODE_TOOLS := $(KUBELET_STAMP) $(DRA_DRIVER_STAMP) pause-image runc nftables
# What a local cluster runs, and no more: make demo builds these (not Kueue, nor the
# Prometheus CRDs, which only the tests use).
LOCAL_TOOLS := $(CLUSTER_STAMPS) $(VERSITYGW_STAMP) $(DISTRIBUTION_STAMP) $(METRICS_SERVER_STAMP) $(NODE_TOOLS)

# tools, test, bench and demo build what they need with $(call parallel,targets...): in
# two lanes, the cluster's go build (the longest) in one and the rest, in order, in the
# other, so that one lane compiles while the other waits on module downloads or a link.
# Callers list tensorflow-image right after the cluster: it waits on Debian and PyPI
# most of its 5 minutes, which the cluster's build fills. The targets are prerequisites
# of one goal, so that make does not report each one that is up to date; + runs the
# sub-make under make -n too. Not make -j for everything: it would also run, say, make
# clean build side by side. A second argument adds variables, as make demo's arches.
parallel = $(MAKE) --no-print-directory -j2 prerequisites PREREQUISITES="$(1)" $(2)

.PHONY: prerequisites
prerequisites: $(PREREQUISITES) ## builds the targets in PREREQUISITES in two lanes (the parallel macro's sub-make)
	@:

# make help prints each target with the "## " comment on its line, in the Makefile's
# order; make help-check (in make verify) fails on a target without one, so that the
# list cannot fall behind the targets.
HELP_TARGETS := ^[a-z][a-zA-Z0-9_-]*:([^=]|$$)
.PHONY: help help-check
help: ## lists the targets, one line each
	@grep -E '$(HELP_TARGETS)' $(firstword $(MAKEFILE_LIST)) | grep ' ## ' | \
		sed -E 's/^([^:]+):.* ## (.*)$$/\1\t\2/' | awk -F'\t' '{ printf "  %-18s %s\n", $$1, $$2 }'
help-check: ## fails on a target without its "## " line for make help
	@missing=$$(grep -E '$(HELP_TARGETS)' $(firstword $(MAKEFILE_LIST)) | { grep -v ' ## ' || true; } | cut -d: -f1); \
		if [ -n "$$missing" ]; then echo "make help: no \"## \" line beside these targets:" $$missing; exit 1; fi

.PHONY: tools node-tools versitygw coredns runc nftables
tools: ## builds the upstream binaries tests and local mode run, into bin/
	@+$(call parallel,$(CLUSTER_STAMPS) $(VERSITYGW_STAMP) $(DISTRIBUTION_STAMP) $(KUEUE_STAMP) $(PROMETHEUS_OPERATOR_STAMP) $(PROMETHEUS_STAMP) $(METRICS_SERVER_STAMP) $(CONTROLLER_GEN_STAMP) $(CRD_REF_DOCS_STAMP) $(STATICCHECK_STAMP) $(TRAINING_OPERATOR_STAMP) $(NODE_TOOLS))
node-tools: ## builds local mode's node: kubelet, kube-proxy, containerd, CNI, the DRA test driver, pause; installs runc, nft
	@+$(call parallel,$(NODE_TOOLS))
versitygw: $(VERSITYGW_STAMP) ## builds the S3 server tests and local mode run, into bin/
coredns: $(COREDNS_STAMP) ## builds the cluster's binaries, CoreDNS among them, into bin/

# runc runs the containers of local mode's pods, under containerd's shim; Debian packages it.
runc: ## installs runc from Debian, unless on PATH
	@command -v runc >/dev/null || { apt-get update -qq && apt-get install -y -qq runc; }

# nft: kube-proxy's nftables mode writes the node's Service rules with it; Debian packages it.
nftables: ## installs nft from Debian, unless on PATH
	@command -v nft >/dev/null || { apt-get update -qq && apt-get install -y -qq nftables; }

# Debian's Chromium, which the dashboard's and TensorBoard's browser tests drive headless.
.PHONY: chromium
chromium: ## installs Chromium from Debian, for the browser tests, unless on PATH
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }

# The control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, CoreDNS)
# and the node (kubelet, kube-proxy, containerd and its runc shim, the CNI plugins) share
# one module, hack/tools/cluster, so that the packages they have in common (client-go,
# the API types, gRPC, protobuf, x/net, x/sys) resolve to one version each and compile
# once: in modules of their own, containerd and the plugins compiled 300 of them again.
# Static and -trimpath, as every Go binary here is built, so that the standard library
# compiles once for all, and no package waits on gcc for cgo.
#
# containerd leaves out the btrfs (cgo only anyway), devmapper and ZFS snapshotters,
# which local mode does not use, and OpenTelemetry tracing, which its containerd.toml
# disables; no Kubernetes, etcd or CoreDNS file reads these tags. Its shim is built
# without gRPC, as containerd's Makefile builds it: it speaks ttrpc. The CNI plugins
# (a bridge per node, host-local addresses, loopback, and portmap for hostPorts) go into
# bin/cni, containerd's bin_dir.
CONTAINERD_LDFLAGS := -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)
CNI_LDFLAGS := -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_PLUGINS_VERSION)
CLUSTER_GO := cd hack/tools/cluster && CGO_ENABLED=0 $(GO) build -trimpath
$(CLUSTER_STAMPS) &: hack/tools/cluster/go.mod hack/tools/cluster/etcd/main.go hack/tools/cluster/coredns/main.go
	$(CLUSTER_GO) -tags no_btrfs,no_devmapper,no_zfs,no_tracing \
		-ldflags "$(TOOL_LDFLAGS) $(KUBE_LDFLAGS) $(CONTAINERD_LDFLAGS)" -o $(BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubelet \
		k8s.io/kubernetes/cmd/kube-proxy \
		./etcd ./coredns \
		github.com/containerd/containerd/v2/cmd/containerd
	$(CLUSTER_GO) -tags no_grpc -ldflags "$(TOOL_LDFLAGS) $(CONTAINERD_LDFLAGS)" -o $(BIN)/ \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	$(CLUSTER_GO) -ldflags "$(TOOL_LDFLAGS) $(CNI_LDFLAGS)" -o $(BIN)/cni/ \
		github.com/containernetworking/plugins/plugins/main/bridge \
		github.com/containernetworking/plugins/plugins/ipam/host-local \
		github.com/containernetworking/plugins/plugins/main/loopback \
		github.com/containernetworking/plugins/plugins/meta/portmap
	mkdir -p $(STAMP) && rm -f $(STAMP)/kube-* $(STAMP)/kubelet-* $(STAMP)/etcd-* $(STAMP)/coredns-* \
		$(STAMP)/containerd-* $(STAMP)/cni-plugins-* && touch $(CLUSTER_STAMPS)

# The DRA driver of local mode's simulated GPUs (local up --dra-gpus, docs/gpus-dra.md):
# Kubernetes' own test driver, from the module and version the kubelet is built from,
# so that it compiles against the packages the cluster's build has compiled already.
# A go build of its own: its binary would be named test-driver in the one above.
$(DRA_DRIVER_STAMP): hack/tools/cluster/go.mod
	$(CLUSTER_GO) -ldflags "$(TOOL_LDFLAGS) $(KUBE_LDFLAGS)" -o $(BIN)/dra-test-driver \
		k8s.io/kubernetes/test/e2e/dra/test-driver
	mkdir -p $(STAMP) && rm -f $(STAMP)/dra-test-driver-* && touch $@

# The control plane of the oldest Kubernetes tfk8s supports, for make test-compat, from a
# module of its own into bin/k8s-<version>/, with etcd and Kueue linked from bin/: etcd
# sits behind kube-apiserver, out of tfk8s's sight, and Kueue is tested on both. 1.35, not 1.32: older releases refuse
# the CEL of the CRD (1.32) or of the notebook policy (1.34); see docs/compatibility.md.
KUBE_COMPAT_MINOR := 1.35
KUBE_COMPAT_VERSION := v$(KUBE_COMPAT_MINOR).4
COMPAT_BIN := $(BIN)/k8s-$(KUBE_COMPAT_VERSION)
COMPAT_STAMP := $(STAMP)/k8s-$(KUBE_COMPAT_VERSION)
$(COMPAT_STAMP): hack/tools/cluster-$(KUBE_COMPAT_MINOR)/go.mod $(ETCD_STAMP)
	rm -rf $(BIN)/k8s-v$(KUBE_COMPAT_MINOR).* && rm -f $(STAMP)/k8s-v$(KUBE_COMPAT_MINOR).*
	cd hack/tools/cluster-$(KUBE_COMPAT_MINOR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(TOOL_LDFLAGS) $(call kube_ldflags,$(KUBE_COMPAT_VERSION))" \
		-o $(COMPAT_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler
	ln -sf ../etcd ../kueue ../kueue-crds $(COMPAT_BIN)/
	touch $@

$(CONTROLLER_GEN_STAMP): hack/tools/controller-gen/go.mod
	$(call go_tool,controller-gen,sigs.k8s.io/controller-tools/cmd/controller-gen)
	$(call stamp,controller-gen)

# crd-ref-docs writes docs/reference/api.md from the TFJob's Go types and their comments
# and markers (make generate), as hack/crd-ref-docs/config.yaml says.
$(CRD_REF_DOCS_STAMP): hack/tools/crd-ref-docs/go.mod
	$(call go_tool,crd-ref-docs,github.com/elastic/crd-ref-docs)
	$(call stamp,crd-ref-docs)

$(STATICCHECK_STAMP): hack/tools/staticcheck/go.mod
	$(call go_tool,staticcheck,honnef.co/go/tools/cmd/staticcheck)
	$(call stamp,staticcheck)

$(VERSITYGW_STAMP): hack/tools/versitygw/go.mod
	$(call go_tool,versitygw,github.com/versity/versitygw/cmd/versitygw)
	$(call stamp,versitygw)

# The CNCF Distribution registry serves the images of local mode's pods; hack/tools/registry
# links only the filesystem driver and htpasswd, which halves what a cold build compiles.
$(DISTRIBUTION_STAMP): hack/tools/registry/go.mod hack/tools/registry/main.go
	$(call go_tool,registry,.)
	$(call stamp,registry)

# Kueue admits, queues and preempts TFJobs in test/integration/kueue; its CRDs come from
# its module, into bin/kueue-crds.
$(KUEUE_STAMP): hack/tools/kueue/go.mod
	$(call go_tool,kueue,sigs.k8s.io/kueue/cmd/kueue,-X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION))
	rm -rf $(BIN)/kueue-crds && mkdir -p $(BIN)/kueue-crds && \
		cp "$$(cd hack/tools/kueue && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"/config/components/crd/bases/*.yaml $(BIN)/kueue-crds/ && \
		chmod u+w $(BIN)/kueue-crds/*.yaml
	$(call stamp,kueue)

# Kubeflow's training-operator runs a kubeflow.org TFJob in test/e2e's migration test
# before tfk8s adopts it; hack/tools/kubeflow-training-operator pins it (the version is
# its go.mod's, TRAINING_OPERATOR_VERSION names the stamp). Its module's directory is
# not its binary's name, so it is built without go_tool.
$(TRAINING_OPERATOR_STAMP): hack/tools/kubeflow-training-operator/go.mod
	cd hack/tools/kubeflow-training-operator && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(TOOL_LDFLAGS)" \
		-o $(BIN)/training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1
	$(call stamp,training-operator)

# The chart's ServiceMonitor is tested in test/integration/install against
# prometheus-operator's own ServiceMonitor CRD: its module, pinned by go.sum and not
# built, is downloaded and the CRD copied into bin/prometheus-operator-crds.
$(PROMETHEUS_OPERATOR_STAMP): hack/tools/prometheus-operator/go.mod hack/tools/prometheus-operator/go.sum
	cd hack/tools/prometheus-operator && go mod download github.com/prometheus-operator/prometheus-operator
	rm -rf $(BIN)/prometheus-operator-crds && mkdir -p $(BIN)/prometheus-operator-crds && \
		cp "$$(cd hack/tools/prometheus-operator && go list -m -f '{{.Dir}}' github.com/prometheus-operator/prometheus-operator)"/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml $(BIN)/prometheus-operator-crds/ && \
		chmod u+w $(BIN)/prometheus-operator-crds/*.yaml
	$(call stamp,prometheus-operator)

# test/e2e's Prometheus test scrapes the local cluster's kubelet and the controller with
# a real Prometheus, and evaluates the Grafana job dashboard's queries through its API.
# Built without its service discoveries (remove_all_sd: the test's targets are static)
# and without its web UI's assets, which only a browser would read. Its stamp is
# prometheus-server-*, so that its rm leaves prometheus-operator's stamp alone.
$(PROMETHEUS_STAMP): hack/tools/prometheus/go.mod
	cd hack/tools/prometheus && CGO_ENABLED=0 $(GO) build -trimpath -tags remove_all_sd -ldflags "$(TOOL_LDFLAGS)" \
		-o $(BIN)/prometheus github.com/prometheus/prometheus/cmd/prometheus
	$(call stamp,prometheus-server)

# Local mode runs metrics-server beside its control plane, so that kubectl top and
# tfk8s top read the metrics API. It is built against older k8s.io modules than tfk8s,
# hence a module of its own; it reads its version from client-go's, as its own build
# stamps it.
$(METRICS_SERVER_STAMP): hack/tools/metrics-server/go.mod
	$(call go_tool,metrics-server,sigs.k8s.io/metrics-server/cmd/metrics-server,-X k8s.io/client-go/pkg/version.gitVersion=$(METRICS_SERVER_VERSION))
	$(call stamp,metrics-server)

.PHONY: generate
generate: $(CONTROLLER_GEN_STAMP) $(CRD_REF_DOCS_STAMP) ## regenerates deepcopy code, the CRDs, RBAC, the Python SDK's submit, the chart's copies and docs/reference
	controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	controller-gen crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	controller-gen crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/kubeflow/... output:crd:artifacts:config=config/crd/kubeflow
	$(GO) run ./hack/crdschema config/crd/bases/tfk8s.io_tfjobs.yaml
	$(GO) run ./hack/pysdk python/src/tfk8s
	controller-gen rbac:roleName=tfk8s-controller paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	crd-ref-docs --log-level ERROR --config hack/crd-ref-docs/config.yaml --source-path ./api/v1alpha1 \
		--renderer markdown --output-path docs/reference/api.md
	$(GO) run ./hack/clidocs docs/reference/cli.md
	@$(MAKE) --no-print-directory chart

# Static and -trimpath, as the images and the Jupyter image's CLI are built, so that a
# cold build compiles their packages once, not three times. The agent needs static
# anyway: it runs in every pod, on whatever the image holds. tfk8s-nvml alone is
# dynamically linked (it loads NVML), and only run where it can be (internal/nvml).
.PHONY: build
build: ## builds tfk8s's own commands into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/tfk8s ./cmd/tfk8s-controller ./cmd/tfk8s-nodeinit ./cmd/tfk8s-agent ./cmd/tfk8s-nvml
	ln -sf tfk8s $(BIN)/kubectl-tfk8s

.PHONY: verify
verify: generate $(STATICCHECK_STAMP) ## gofmt, go vet, staticcheck, ruff and mypy, generated files up to date, the tree's shape, make help's lines
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	staticcheck ./...
	@$(MAKE) --no-print-directory python-venv
	cd python && $(PY_VENV)/bin/ruff check src tests && $(PY_VENV)/bin/mypy src tests
	git diff --exit-code -- api config charts python docs/reference || { echo "generated files are out of date: run make generate and commit"; exit 1; }
	$(GO) run ./hack/shape
	$(GO) run ./hack/shape -deps ./cmd/tfk8s-dashboard -forbid cobra,internal/cli,localcluster,controlplane,localnode
	@# Loading a library would make them dynamically linked: tfk8s-nvml alone may.
	for cmd in tfk8s tfk8s-agent tfk8s-controller tfk8s-nodeinit; do $(GO) run ./hack/shape -deps ./cmd/$$cmd -forbid purego,nvml/dlopen || exit 1; done
	@$(MAKE) --no-print-directory help-check

# Integration tests find the control plane binaries through TFK8S_BIN.
export TFK8S_BIN := $(BIN)

# The install tests check the images make images writes; the e2e tests run pods in them
# and in the TensorFlow image, and install tfk8s into a local cluster with helm and
# kustomize, and a release as docs/install.md says, with helm, kubectl and krew.
.PHONY: test
test: ## unit, integration and e2e tests against a real control plane, then bench-smoke
	@+$(call parallel,$(CLUSTER_STAMPS) tensorflow-image tensorflow-gpu-image $(TEST_TOOLS) $(HELM_STAMP) $(KUSTOMIZE_STAMP) $(KUBECTL_STAMP) $(KREW_STAMP) chromium build images $(NODE_TOOLS) $(PY_STAMP) $(PY_WHEELS_STAMP) $(KF_STAMP) $(TRAINING_OPERATOR_STAMP))
	go test -count=1 -timeout 60m -v ./... | grep -v -E "^=== (RUN|PAUSE|CONT)"
	@$(MAKE) --no-print-directory bench-smoke

# make test-gpu is the GPU check (test/gpu), not part of make test: on a machine with
# NVIDIA GPUs, a 2-worker MultiWorkerMirroredStrategy job in ghcr.io/tfk8s/tensorflow:2.21.0-gpu
# on a local cluster of the host's real GPUs (tfk8s local up --real-gpus), each
# worker on its own. It first names whatever the machine lacks (the driver's
# /dev/nvidia0, NVML, bin/ tools, the GPU image or the package index to build it
# from) and stops there; docs/gpus.md says how to run it.
.PHONY: test-gpu
test-gpu: ## the GPU check, on a machine with 2 NVIDIA GPUs; first names what the machine lacks
	$(GO) run ./test/gpu/check $(ROOT)
	test -f $(OUT)/images/tensorflow-gpu/index.json || $(MAKE) --no-print-directory tensorflow-gpu-image
	$(GO) test -tags gpu -count=1 -timeout 30m -v -run TestMultiWorkerOnRealGPUs ./test/gpu/

# make test-compat runs the suites that speak to the API server alone (the CRD and its
# CEL rules, the admission policies, a job's life under the controller, Kueue's
# admission of jobs) against the oldest Kubernetes tfk8s supports and the newest, one
# after the other, and ends with a matrix: release, suite, result, time, tests skipped.
# COMPAT_RELEASES=oldest runs the oldest alone (CI, whose make test has just run the
# suites on the newest).
COMPAT_SUITES := ./test/integration/api ./test/integration/controller ./test/integration/kueue
COMPAT_RELEASES ?= oldest newest
COMPAT_BINS = $(patsubst oldest,$(COMPAT_BIN),$(patsubst newest,$(BIN),$(COMPAT_RELEASES)))
COMPAT_OUT = $(OUT)/compat
.PHONY: test-compat
test-compat: ## the API, controller and Kueue suites on the oldest and newest Kubernetes
	@+$(call parallel,$(CLUSTER_STAMPS) $(KUEUE_STAMP) $(COMPAT_STAMP))
	@mkdir -p $(COMPAT_OUT); rows=(); fail=0; \
	for bin in $(COMPAT_BINS); do \
		kube=$$($$bin/kube-apiserver --version); kube=$${kube#Kubernetes }; \
		for suite in $(COMPAT_SUITES); do \
			log=$(COMPAT_OUT)/$$kube-$$(basename $$suite).log; start=$$(date +%s); \
			echo "TFK8S_BIN=$$bin go test -count=1 -timeout 30m -v $$suite"; \
			if TFK8S_BIN=$$bin go test -count=1 -timeout 30m -v $$suite 2>&1 | tee $$log | grep -v -E "^=== (RUN|PAUSE|CONT)"; \
				then result=PASS; else result=FAIL; fail=1; fi; \
			rows+=("$$(printf '%-10s %-30s %-6s %5ss %3s skipped' $$kube $$suite $$result \
				$$(( $$(date +%s) - start )) $$(grep -c -- '--- SKIP' $$log || true))"); \
		done; \
	done; \
	echo; printf '%-10s %-30s %-6s %6s\n' kubernetes suite result time; printf '%s\n' "$${rows[@]}"; \
	echo "logs: $(COMPAT_OUT)"; exit $$fail

.PHONY: test-unit
test-unit: ## the unit tests alone, without test/
	go test -count=1 $$(go list ./... | grep -v /test/)

# Each fuzz target for FUZZTIME, one after another (go test runs one fuzz target at a
# time); make test runs their seed corpora and testdata/fuzz as ordinary tests. A
# target missing from its package fails, since go test would pass fuzzing nothing.
FUZZTIME ?= 60s
FUZZ_TARGETS = FuzzDecode:./internal/manifests FuzzDecodeManifest:./internal/jobspec \
	FuzzUnpack:./internal/pack FuzzCompose:./internal/tfconfig FuzzANSISegments:./internal/dashboard

.PHONY: fuzz
fuzz: ## each fuzz target for FUZZTIME, one after another
	@set -e; for t in $(FUZZ_TARGETS); do \
		grep -qs "^func $${t%%:*}(" $${t#*:}/*_test.go || { echo "make fuzz: no $${t%%:*} in $${t#*:}" >&2; exit 1; }; \
		echo "go test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZTIME) $${t#*:}"; \
		go test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZTIME) $${t#*:}; \
	done

# The chaos suite in full, three runs in a row: 30 jobs while the controller is
# SIGKILLed every 2 s for 60 s, the API server restarted, S3 down for 60 s. make test
# runs a short one (8 jobs, 20 s, 10 s).
.PHONY: chaos
chaos: ## the chaos suite in full, three runs in a row
	@+$(call parallel,$(CLUSTER_STAMPS) tensorflow-image $(TEST_TOOLS) build images $(NODE_TOOLS))
	TFK8S_CHAOS_JOBS=30 TFK8S_CHAOS_SECONDS=60 TFK8S_CHAOS_S3_OUTAGE=60 \
		go test -count=3 -timeout 90m -v -run TestChaos ./test/chaos/ | grep -v -E "^=== (RUN|PAUSE|CONT)"

.PHONY: bench
bench: ## benchmarks against a real control plane, into docs/benchmarks.md
	@+$(call parallel,$(CLUSTER_STAMPS) tensorflow-image $(TEST_TOOLS) build images $(NODE_TOOLS))
	TFK8S_BENCH_REPORT=$(ROOT)/docs/benchmarks.md go test -count=1 -timeout 60m -run '^$$' -bench . -benchtime 1x ./test/bench/...

# Every benchmark of test/bench at its smallest size, one round (TFK8S_BENCH_SMOKE), as
# make test runs them after the tests: their figures mean nothing, but a benchmark that
# no longer runs fails here, not in the next make bench. Each benchmark that ran to its
# end prints a result line; one missing fails. The local clusters' benchmarks run the
# Python image here, not TensorFlow's. 143 s at a load average of 10 on 2 CPUs.
.PHONY: bench-smoke
bench-smoke: ## every benchmark at its smallest, once, as make test ends
	@want=$$(cat test/bench/*_test.go | grep -c '^func Benchmark'); \
	echo "TFK8S_BENCH_SMOKE=1 go test -count=1 -timeout 10m -run '^$$' -bench . -benchtime 1x ./test/bench/"; \
	start=$$(date +%s); \
	TFK8S_BENCH_SMOKE=1 go test -count=1 -timeout 10m -run '^$$' -bench . -benchtime 1x ./test/bench/ 2>&1 | tee $(OUT)/bench-smoke.log; \
	got=$$(grep -c -E '^Benchmark[A-Za-z0-9]+(-[0-9]+)?[[:space:]]+1[[:space:]]' $(OUT)/bench-smoke.log || true); \
	echo "bench-smoke: $$got of $$want benchmarks ran to their end in $$(( $$(date +%s) - start ))s"; \
	[ "$$got" -eq "$$want" ]

# The main job: a local cluster (a real control plane, a registry holding the images and a
# node running each pod in its image under runc) and a distributed TensorFlow job on it:
# examples/tensorflow/ps_strategy.py, ParameterServerStrategy with 2 PS, 3 workers and a
# chief, in ghcr.io/tfk8s/tensorflow:2.21.0-cpu, its logs streamed; then the checkpoints,
# summaries and logs it left in S3. The cluster stays up.
LOCAL_DIR ?= $(HOME)/.tfk8s/local
DEMO_ENV := KUBECONFIG=$(LOCAL_DIR)/kubeconfig TFK8S_CONFIG=$(LOCAL_DIR)/s3.yaml
DEMO_IMAGE := ghcr.io/tfk8s/tensorflow:2.21.0-cpu

.PHONY: demo
demo: ## a local cluster and a distributed TensorFlow job on it; the cluster stays up
	@+$(call parallel,$(CLUSTER_STAMPS) tensorflow-image $(LOCAL_TOOLS) build images,IMAGE_ARCHES=$(HOST_ARCH))
	@start=$$(date +%s); \
	bin/tfk8s local up --dir $(LOCAL_DIR); \
	if $(DEMO_ENV) bin/tfk8s get demo >/dev/null 2>&1; then $(DEMO_ENV) bin/tfk8s delete demo --wait; fi; \
	$(DEMO_ENV) bin/tfk8s submit examples/tensorflow --name demo --image $(DEMO_IMAGE) \
		--ps 2 --workers 3 --chief --artifacts checkpoints --artifacts-interval 10s --tensorboard --follow \
		-- python3 ps_strategy.py --epochs 4 --steps-per-epoch 25 --model-dir /workspace/checkpoints; \
	$(DEMO_ENV) bin/tfk8s get demo; \
	echo; echo "pods left (the parameter servers are recycled once the chief succeeds):"; \
	$(DEMO_ENV) bin/tfk8s describe demo | sed -n '/Replicas/,/^$$/p'; \
	$(DEMO_ENV) bin/tfk8s artifacts ls demo; \
	echo; echo "demo done in $$(( $$(date +%s) - start ))s; the cluster is still up:"; \
	echo "  export $(DEMO_ENV)"; \
	echo "  bin/tfk8s list    # and: bin/tfk8s local down  to stop it"; \
	echo "  bin/tfk8s tensorboard demo --open    # the demo's TensorBoard, for an hour"

.PHONY: clean
clean: ## removes bin/
	rm -rf $(BIN)

# Install: the images, the Helm chart and the kustomize manifests.
#
# make images     OCI layouts of tfk8s-controller and tfk8s-agent (linux/amd64 and
#                 linux/arm64) under _out/images/<name>/, built without Docker
# make push       pushes them to $(REGISTRY)/<name>:$(VERSION)
# make install-tools  builds helm, kustomize, kubectl and krew (the kubectl plugin
#                     manager the install test installs the release's plugin with) into bin/
#
# The version lives in one place, internal/version/version.go; VERSION=... overrides it
# for a build. The controller's default --agent-image is $(IMAGE_REPO)/tfk8s-agent:$(VERSION).
HELM_VERSION := v3.21.4
KUSTOMIZE_VERSION := v5.8.2
KREW_VERSION := v0.4.3
KUBECTL_VERSION := v1.37.2
HELM_STAMP := $(STAMP)/helm-$(HELM_VERSION)
KUSTOMIZE_STAMP := $(STAMP)/kustomize-$(KUSTOMIZE_VERSION)
KREW_STAMP := $(STAMP)/krew-$(KREW_VERSION)
KUBECTL_STAMP := $(STAMP)/kubectl-$(KUBECTL_VERSION)

VERSION ?= $(shell sed -n 's/^var Version = "\(.*\)"$$/\1/p' internal/version/version.go)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_REPO ?= ghcr.io/tfk8s
IMAGE_SOURCE ?= https://github.com/tfk8s/tfk8s
IMAGES := tfk8s-controller tfk8s-agent tfk8s-dashboard
IMAGE_ARCHES := amd64 arm64
# make demo builds its images for this machine only: its cluster runs nothing else.
HOST_ARCH := $(shell go env GOARCH)
VERSION_PKG := github.com/tfk8s/tfk8s/internal/version
IMAGE_LDFLAGS := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) \
	-X $(VERSION_PKG).Repository=$(IMAGE_REPO)
OUT := $(ROOT)/_out

.PHONY: install-tools helm kustomize krew kubectl images push
install-tools: ## builds helm, kustomize, kubectl and krew into bin/
	@+$(call parallel,$(HELM_STAMP) $(KUSTOMIZE_STAMP) $(KREW_STAMP) $(KUBECTL_STAMP))
helm: $(HELM_STAMP) ## builds helm into bin/
kustomize: $(KUSTOMIZE_STAMP) ## builds kustomize into bin/
krew: $(KREW_STAMP) ## builds krew, the kubectl plugin manager, into bin/kubectl-krew
kubectl: $(KUBECTL_STAMP) ## builds kubectl, for the docs' commands, into bin/

$(HELM_STAMP): hack/tools/helm/go.mod
	$(call go_tool,helm,helm.sh/helm/v3/cmd/helm,-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION))
	$(call stamp,helm)

$(KUSTOMIZE_STAMP): hack/tools/kustomize/go.mod
	$(call go_tool,kustomize,sigs.k8s.io/kustomize/kustomize/v5)
	$(call stamp,kustomize)

# krew as kubectl finds a plugin: bin/kubectl-krew.
$(KREW_STAMP): hack/tools/krew/go.mod
	cd hack/tools/krew && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(TOOL_LDFLAGS) -X sigs.k8s.io/krew/internal/version.gitTag=$(KREW_VERSION)" \
		-o $(BIN)/kubectl-krew sigs.k8s.io/krew/cmd/krew
	$(call stamp,krew)

# kubectl, for the docs' commands: its module's version is KUBECTL_VERSION, 1.x.y as v0.x.y.
$(KUBECTL_STAMP): hack/tools/kubectl/go.mod hack/tools/kubectl/main.go
	$(call go_tool,kubectl,.,$(call kube_ldflags,$(KUBECTL_VERSION)))
	$(call stamp,kubectl)

# ghcr.io/tfk8s/python:3.11 (Debian bookworm made by debootstrap, and python3),
# ghcr.io/tfk8s/tensorflow:2.21.0-cpu (that, and tensorflow-cpu with its requirements
# pinned by hash in hack/tensorflow-image/requirements.txt) and
# ghcr.io/tfk8s/jupyter:2.21.0-cpu (that, JupyterLab pinned by hash in
# hack/tensorflow-image/jupyter-requirements.txt, the tfk8s CLI, stamped with VERSION
# as the images are, and the Python SDK of python/), as OCI layouts
# under _out/images/. Cached in ~/.cache/tfk8s/tensorflow-image: a second build costs a
# second, plus the CLI's go build (about 10 s after a change to the CLI).
.PHONY: tensorflow-image
tensorflow-image: ## the Python, TensorFlow and Jupyter images as OCI layouts under _out/images/
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/tensorflow-image --out $(OUT)/images --cli-ldflags "$(IMAGE_LDFLAGS)"

# ghcr.io/tfk8s/tensorflow:2.21.0-gpu, the CUDA image, as the OCI layout
# _out/images/tensorflow-gpu/: the python layer of tensorflow-image, one layer per
# nvidia-*-cu12 wheel of hack/tensorflow-image/gpu-requirements.txt and one of tensorflow
# 2.21.0 built with CUDA (docs/gpus.md). About 3 GB to download and 6 GB unpacked: a
# target of its own, which make demo and local up do not need; cached as tensorflow-image
# is (the layers in ~/.cache/tfk8s/tensorflow-image/gpu-layers, the layout's blobs hard
# links to them). After tensorflow-image, whose python layer and root it starts from:
# two builds sharing the cache at once would make them both. make test builds it
# beside the rest of its set-up, as tensorflow-image; TestTensorFlowJobs runs a job in it.
.PHONY: tensorflow-gpu-image
tensorflow-gpu-image: tensorflow-image ## the CUDA TensorFlow image as an OCI layout under _out/images/tensorflow-gpu/
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/tensorflow-image --gpu --out $(OUT)/images

# Static binaries for each platform, then one OCI image index per binary: a layer with
# the binary on an empty base, user 65532, OCI labels. No base image to pull. The
# agent's carries tfk8s-nvml beside it, which its install copies into each pod.
images: ## tfk8s's images (amd64, arm64) as OCI layouts under _out/images/, without Docker
	@test -n "$(VERSION)" || { echo "VERSION is empty: internal/version/version.go has no var Version"; exit 1; }
	for arch in $(IMAGE_ARCHES); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(IMAGE_LDFLAGS)" \
			-o $(OUT)/bin/linux_$$arch/ $(addprefix ./cmd/,$(IMAGES)) ./cmd/tfk8s-nvml; \
	done
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/images build --bin $(OUT)/bin --out $(OUT)/images --arch "$(IMAGE_ARCHES)" \
		--version $(VERSION) --revision "$(REVISION)" --source $(IMAGE_SOURCE) --extra tfk8s-agent:tfk8s-nvml $(IMAGES)

# The pause image, PID 1 of every pod's sandbox: hack/pause as an OCI layout named
# registry.k8s.io/pause:3.10.2, containerd v2.4.2's default sandbox image, which tfk8s
# local up pushes to its registry; so no node pulls it from the internet. It runs as
# 65535:65535, as the upstream image does.
PAUSE_VERSION := 3.10.2
# Only local nodes run it, on this machine: its arch alone.
PAUSE_ARCHES := $(HOST_ARCH)
PAUSE_LAYOUT := $(OUT)/images/pause/index.json
.PHONY: pause-image
pause-image: $(PAUSE_LAYOUT) ## the pause image as an OCI layout under _out/images/pause/
$(PAUSE_LAYOUT): hack/pause/main.go $(wildcard hack/images/*.go hack/images/ociimage/*.go)
	for arch in $(PAUSE_ARCHES); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w" -o $(OUT)/bin/linux_$$arch/ ./hack/pause; \
	done
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/images build --bin $(OUT)/bin --out $(OUT)/images --arch "$(PAUSE_ARCHES)" \
		--version $(PAUSE_VERSION) --revision "$(REVISION)" --source $(IMAGE_SOURCE) \
		--repository registry.k8s.io --user 65535:65535 pause

push: ## pushes the images to $(REGISTRY)/<name>:$(VERSION)
	@test -n "$(REGISTRY)" || { echo "REGISTRY is required: make push REGISTRY=host:port[/path]"; exit 1; }
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/images push --out $(OUT)/images --registry $(REGISTRY) --version $(VERSION) $(IMAGES)

# make release VERSION=vX.Y.Z REGISTRY=host:port[/path] builds a release stamped with
# VERSION and publishes it (hack/release says how): the images to REGISTRY, the chart to
# oci://REGISTRY/charts, its values naming those images; the CLI archives for linux and
# darwin, amd64 and arm64, SHA256SUMS and the krew manifest, whose URIs start with
# RELEASE_URL, under RELEASE_OUT/VERSION/. RELEASE_PLAIN_HTTP=1 pushes the chart over
# plain HTTP (a test's registry). The binaries name REGISTRY as their images'
# repository (the last -X wins): the controller's default agent image is the release's.
# A VERSION that is not a pre-release (no -suffix) needs its "## VERSION" section in
# RELEASE_CHANGELOG, not marked unreleased, or nothing is built: write the notes and
# date them first. The release test points RELEASE_CHANGELOG at a changelog of its own.
RELEASE_CHANGELOG ?= CHANGELOG.md
RELEASE_URL ?= https://github.com/tfk8s/tfk8s/releases/download/$(VERSION)
RELEASE_OUT ?= $(OUT)/release
RELEASE_PLAIN_HTTP ?=
# RELEASE_GPU_IMAGE=1 (the default) builds and publishes the CUDA image too (make
# tensorflow-gpu-image: 4.1 GB to push); the tests' releases set it empty, so that
# they push what they pushed before it.
RELEASE_GPU_IMAGE ?= 1

.PHONY: release
release: $(HELM_STAMP) ## builds and publishes a release: make release VERSION=vX.Y.Z REGISTRY=host:port
	@test -n "$(REGISTRY)" || { echo "REGISTRY is required: make release VERSION=vX.Y.Z REGISTRY=host:port[/path]"; exit 1; }
	$(GO) run ./hack/release --version $(VERSION) --revision "$(REVISION)" --registry $(REGISTRY) \
		--ldflags "$(IMAGE_LDFLAGS) -X $(VERSION_PKG).Repository=$(REGISTRY)" --release-url "$(RELEASE_URL)" --out $(RELEASE_OUT) \
		--changelog "$(RELEASE_CHANGELOG)" --helm $(BIN)/helm $(if $(RELEASE_PLAIN_HTTP),--plain-http) \
		$(if $(RELEASE_GPU_IMAGE),--gpu-image)

# The chart carries copies of the CRD, the admission policy, the ClusterRole and the
# Grafana dashboard (Helm reads no file outside the chart): make chart refreshes them,
# and the install tests fail while they differ from config/.
.PHONY: chart
chart: ## refreshes the chart's copies of the CRD, policies, ClusterRole and dashboard
	cp config/crd/bases/tfk8s.io_tfjobs.yaml charts/tfk8s/crds/
	cp config/crd/kubeflow/kubeflow.org_tfjobs.yaml config/policy/kubeflow/kubeflow-tfjob-policy.yaml charts/tfk8s/files/
	cp config/policy/tfjob-policy.yaml config/policy/notebook-tfjob-policy.yaml config/rbac/role.yaml charts/tfk8s/files/
	cp config/grafana/tfk8s-controller.json config/grafana/tfk8s-job.json charts/tfk8s/files/

# The Python SDK, python/: a wheel for each of PY_PLATFORMS into _out/python/, each
# carrying the tfk8s binary for its platform, built with the tag sdk (the CLI less
# local, notebook, tensorboard and dashboard, which the SDK never runs: 33 MB instead
# of 61) and tagged for it. The build backend, hatchling, pytest, ruff and mypy are
# pinned in python/requirements-dev.txt, in a venv under _out/ made again when the pins
# change (the stamp names their hash). Wheel tags: manylinux_2_17 for a
# static binary, which needs no libc; macOS 11, the oldest Go supports. make release
# (hack/release) builds its wheels from a copy of PY_SRC stamped with its version, the
# binaries into PY_BIN and the wheels into PY_OUT of its own.
PYTHON ?= python3
PY_VENV := $(OUT)/python-venv
PY_REQUIREMENTS := python/requirements-dev.txt
PY_STAMP := $(PY_VENV)/.stamp-$(shell sha256sum $(PY_REQUIREMENTS) | cut -c1-12)
PY_OUT := $(OUT)/python
PY_SRC := python
PY_BIN := $(OUT)/bin
PY_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
.PHONY: python python-venv test-python
python-venv: $(PY_STAMP) ## the venv of the Python SDK's pinned tools, under _out/
$(PY_STAMP): $(PY_REQUIREMENTS)
	rm -rf $(PY_VENV) && $(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(PY_REQUIREMENTS)
	$(PY_VENV)/bin/pip check -q --disable-pip-version-check
	touch $@

# hatchling and what it needs, as wheels at PY_REQUIREMENTS' pins, in a folder pip
# finds them in with --no-index: the README tour's test installs python/ (pip builds
# it with hatchling in an isolated environment) from there, not from PyPI.
PY_WHEELS := $(OUT)/python-wheels
PY_WHEELS_STAMP := $(PY_WHEELS)/.stamp-$(shell sha256sum $(PY_REQUIREMENTS) | cut -c1-12)
.PHONY: python-wheels
python-wheels: $(PY_WHEELS_STAMP) ## hatchling's wheels under _out/, for pip install python/ offline
$(PY_WHEELS_STAMP): $(PY_STAMP)
	rm -rf $(PY_WHEELS) && mkdir -p $(PY_WHEELS)
	$(PY_VENV)/bin/pip download -q --disable-pip-version-check --only-binary=:all: -d $(PY_WHEELS) \
		-c $(PY_REQUIREMENTS) $$(grep -E '^hatchling==' $(PY_REQUIREMENTS))
	touch $@

python: $(PY_STAMP) ## builds the Python SDK's wheels into _out/python/
	rm -rf $(PY_OUT) && mkdir -p $(PY_OUT)
	for p in $(PY_PLATFORMS); do \
		bin=$(PY_BIN)/sdk_$${p/\//_}/tfk8s; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -tags sdk -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $$bin ./cmd/tfk8s; \
		case $$p in \
			linux/amd64) tag=manylinux_2_17_x86_64;; linux/arm64) tag=manylinux_2_17_aarch64;; \
			darwin/amd64) tag=macosx_11_0_x86_64;; darwin/arm64) tag=macosx_11_0_arm64;; \
			*) echo "no wheel tag for $$p"; exit 1;; \
		esac; \
		(cd $(PY_SRC) && TFK8S_WHEEL_BINARY=$$bin TFK8S_WHEEL_PLATFORM=$$tag \
			$(PY_VENV)/bin/python -m hatchling build -t wheel -d $(PY_OUT)); \
	done
	ls -l $(PY_OUT)

# Kubeflow's Python SDK, kubeflow-training, and its dependencies, each pinned in
# test/e2e/kubeflow/requirements.txt, in a venv of their own: test/e2e's
# TestKubeflowSDK drives tfk8s's kubeflow.org TFJobs with it, as Kubeflow's users do.
# The stamp names the requirements' hash, so that a change of pins makes it again.
KF_VENV := $(OUT)/kubeflow-venv
KF_REQUIREMENTS := test/e2e/kubeflow/requirements.txt
KF_STAMP := $(KF_VENV)/.stamp-$(shell sha256sum $(KF_REQUIREMENTS) | cut -c1-12)
.PHONY: kubeflow-venv
kubeflow-venv: $(KF_STAMP) ## the venv of Kubeflow's Python SDK, for test/e2e's TestKubeflowSDK
$(KF_STAMP): $(KF_REQUIREMENTS)
	rm -rf $(KF_VENV) && $(PYTHON) -m venv $(KF_VENV)
	$(KF_VENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(KF_REQUIREMENTS)
	$(KF_VENV)/bin/pip check
	touch $@

# The SDK's unit tests, without a cluster, against bin/tfk8s (make build); test/e2e's
# TestPythonSDK runs them all against a local cluster.
test-python: $(PY_STAMP) build ## the Python SDK's unit tests against bin/tfk8s
	cd python && TFK8S_BIN=$(BIN)/tfk8s $(PY_VENV)/bin/python -m pytest -q tests
