package localnode

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A stopping node gives each pod its grace period, as a kubelet draining its node
// would: the kubelet is stopped first so that it restarts nothing, then every running
// container is stopped through CRI within its own pod's grace period, all at once,
// while the API server and S3 still serve the pods' last writes.

// gracePeriodAnnotation is where the kubelet records a pod's grace period on each of
// its containers.
const gracePeriodAnnotation = "io.kubernetes.pod.terminationGracePeriod"

// defaultGracePeriod is a pod's grace period when its containers do not say.
const defaultGracePeriod = 30 * time.Second

// stopMargin is what stopping takes beyond the longest grace period.
const stopMargin = 15 * time.Second

// stopContainers stops every running container of the node's containerd, each within
// its pod's grace period, then every pod sandbox, which releases its address.
func stopContainers(socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to containerd: %w", err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	list, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	cancel()
	if err != nil {
		return fmt.Errorf("listing the node's containers: %w", err)
	}
	longest := defaultGracePeriod
	for _, c := range list.Containers {
		longest = max(longest, gracePeriod(c.Annotations))
	}
	ctx, cancel = context.WithTimeout(context.Background(), longest+stopMargin)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range list.Containers {
		wg.Go(func() {
			timeout := int64(gracePeriod(c.Annotations) / time.Second)
			_, _ = rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: timeout})
		})
	}
	wg.Wait()
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing the node's pods: %w", err)
	}
	for _, s := range sandboxes.Items {
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
	}
	return nil
}

// gracePeriod reads a container's pod's grace period from its annotations.
func gracePeriod(annotations map[string]string) time.Duration {
	s, err := strconv.ParseInt(annotations[gracePeriodAnnotation], 10, 64)
	if err != nil || s < 0 {
		return defaultGracePeriod
	}
	return time.Duration(s) * time.Second
}
