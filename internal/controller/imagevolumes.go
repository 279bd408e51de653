package controller

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The agent reaches a pod as an image volume where every node can mount one, else
// through an init container. An image volume needs the kubelet's ImageVolume feature,
// GA and locked on from v1.36, and a runtime that mounts images: containerd from 2.1,
// CRI-O from 1.31. A node that cannot would never start the pod, so the nodes are
// asked, not the user: a flag set once goes stale as nodes come and go.

// +kubebuilder:rbac:groups="",resources=nodes,verbs=list

// imageVolumeCheckEvery is how often the nodes are listed again.
const imageVolumeCheckEvery = time.Minute

var (
	minImageVolumeKubelet    = version.MustParseGeneric("1.36.0")
	minImageVolumeContainerd = version.MustParseGeneric("2.1.0")
	minImageVolumeCRIO       = version.MustParseGeneric("1.31.0")
)

// nodeMountsImages reports whether a node's kubelet and runtime, as it reports them,
// mount image volumes.
func nodeMountsImages(info corev1.NodeSystemInfo) bool {
	kubelet, err := version.ParseGeneric(info.KubeletVersion)
	if err != nil || kubelet.LessThan(minImageVolumeKubelet) {
		return false
	}
	name, v, ok := strings.Cut(info.ContainerRuntimeVersion, "://")
	if !ok {
		return false
	}
	runtime, err := version.ParseGeneric(v)
	if err != nil {
		return false
	}
	switch name {
	case "containerd":
		return !runtime.LessThan(minImageVolumeContainerd)
	case "cri-o":
		return !runtime.LessThan(minImageVolumeCRIO)
	}
	return false
}

// everyNodeMountsImages reports whether there are nodes and every one mounts image
// volumes: a pod may land on any of them.
func everyNodeMountsImages(nodes []corev1.Node) bool {
	for i := range nodes {
		if !nodeMountsImages(nodes[i].Status.NodeInfo) {
			return false
		}
	}
	return len(nodes) > 0
}

// imageVolumeDetector keeps whether every node mounts image volumes, listing the nodes
// at start and every imageVolumeCheckEvery. Until the first list, and whenever one
// fails, the agent goes by init container, which every node runs.
type imageVolumeDetector struct {
	reader client.Reader
	on     atomic.Bool
}

// Start lists the nodes until ctx ends; a manager.Runnable.
func (d *imageVolumeDetector) Start(ctx context.Context) error {
	for {
		d.on.Store(d.detect(ctx))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(imageVolumeCheckEvery):
		}
	}
}

// detect lists the nodes, 500 at a time, and reports whether every one mounts images.
func (d *imageVolumeDetector) detect(ctx context.Context) bool {
	var nodes []corev1.Node
	opts := []client.ListOption{client.Limit(500)}
	for {
		list := &corev1.NodeList{}
		if err := d.reader.List(ctx, list, opts...); err != nil {
			log.FromContext(ctx).Info("Listing the nodes to see whether they mount image volumes; the agent goes by init container", "error", err.Error())
			return false
		}
		nodes = append(nodes, list.Items...)
		if list.Continue == "" {
			return everyNodeMountsImages(nodes)
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
	}
}

// imageVolumes reports whether pods built now get the agent as an image volume.
func (d *imageVolumeDetector) imageVolumes() bool {
	return d != nil && d.on.Load()
}
