# tfk8s — TensorFlow on Kubernetes.
#
# make tools      builds the upstream binaries tests and local mode run, into bin/
# make generate   regenerates deepcopy code, the CRD and RBAC
# make build      builds tfk8s's own commands into bin/
# make verify     gofmt, go vet, staticcheck, and generated files up to date
# make test       unit and integration tests against a real control plane
# make bench      benchmarks against a real control plane

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)
export GOFLAGS ?= -buildvcs=false

# Versions of the tools built from the Go module proxy. Each binary is rebuilt only when
# its stamp, bin/.stamp/<name>-<version>, is missing.
KUBE_VERSION := v1.36.3
ETCD_VERSION := v3.6.16
CONTROLLER_GEN_VERSION := v0.21.0
STATICCHECK_VERSION := v0.8.2
VERSITYGW_VERSION := v1.8.0

STAMP := $(BIN)/.stamp
KUBE_STAMP := $(STAMP)/kube-$(KUBE_VERSION)
ETCD_STAMP := $(STAMP)/etcd-$(ETCD_VERSION)
CONTROLLER_GEN_STAMP := $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK_STAMP := $(STAMP)/staticcheck-$(STATICCHECK_VERSION)
VERSITYGW_STAMP := $(STAMP)/versitygw-$(VERSITYGW_VERSION)

KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean

TEST_TOOLS := $(KUBE_STAMP) $(ETCD_STAMP) $(VERSITYGW_STAMP)

.PHONY: tools versitygw
tools: $(KUBE_STAMP) $(ETCD_STAMP) $(CONTROLLER_GEN_STAMP) $(STATICCHECK_STAMP) $(VERSITYGW_STAMP)
versitygw: $(VERSITYGW_STAMP)

$(KUBE_STAMP): hack/tools/kube/go.mod
	cd hack/tools/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler
	mkdir -p $(STAMP) && rm -f $(STAMP)/kube-* && touch $@

$(ETCD_STAMP): hack/tools/etcd/go.mod
	cd hack/tools/etcd && go build -o $(BIN)/etcd .
	mkdir -p $(STAMP) && rm -f $(STAMP)/etcd-* && touch $@

$(CONTROLLER_GEN_STAMP): hack/tools/controller-gen/go.mod
	cd hack/tools/controller-gen && go build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	mkdir -p $(STAMP) && rm -f $(STAMP)/controller-gen-* && touch $@

$(STATICCHECK_STAMP): hack/tools/staticcheck/go.mod
	cd hack/tools/staticcheck && go build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck
	mkdir -p $(STAMP) && rm -f $(STAMP)/staticcheck-* && touch $@

$(VERSITYGW_STAMP): hack/tools/versitygw/go.mod
	cd hack/tools/versitygw && go build -o $(BIN)/versitygw github.com/versity/versitygw/cmd/versitygw
	mkdir -p $(STAMP) && rm -f $(STAMP)/versitygw-* && touch $@

.PHONY: generate
generate: $(CONTROLLER_GEN_STAMP)
	controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	controller-gen crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	controller-gen rbac:roleName=tfk8s-controller paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: build
build:
	go build -o $(BIN)/ ./cmd/...

.PHONY: verify
verify: generate $(STATICCHECK_STAMP)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	staticcheck ./...
	git diff --exit-code -- api config || { echo "generated files are out of date: run make generate and commit"; exit 1; }

# Integration tests find the control plane binaries through TFK8S_BIN.
export TFK8S_BIN := $(BIN)

.PHONY: test
test: $(TEST_TOOLS) build
	go test -count=1 -v ./... | grep -v -E "^=== (RUN|PAUSE|CONT)"

.PHONY: test-unit
test-unit:
	go test -count=1 $$(go list ./... | grep -v /test/)

.PHONY: bench
bench: $(TEST_TOOLS) build
	go test -count=1 -run '^$$' -bench . -benchtime 1x ./test/bench/...

.PHONY: clean
clean:
	rm -rf $(BIN)
