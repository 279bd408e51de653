package cli

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/tensorboard"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestTensorBoardOverRuns: tfk8s tensorboard over two runs, one of a TFJob deleted
// since (its Secret with it), creates one pod with the user's rights whose mirrors
// read each run's prefix, into a directory named after the run, with a Secret of the
// pod's own by reference, and deletes that pod when the command ends; over runs of
// one job it reads with that job's Secret. A job without its own TensorBoard named
// alone is refused with the run to name instead, and the flags of runs beside a job
// with its own. There is no node in this suite, so no TensorBoard answers here.
func TestTensorBoardOverRuns(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "alpha", "--image", "tf", "--artifacts", "logs", "--", "python3", "train.py")
	f.mustSucceed("submit", code, "--name", "beta", "--image", "tf", "--artifacts", "logs", "--", "python3", "train.py")
	alpha, beta := f.getJob("alpha"), f.getJob("beta")
	alphaRun, betaRun := tfjob.RunID(string(alpha.UID)), tfjob.RunID(string(beta.UID))
	f.mustSucceed("delete", "beta", "--wait")

	t.Run("RefusesAJobWithoutTensorBoardNamingItsRun", func(t *testing.T) {
		r := f.tfk8s("tensorboard", "alpha")
		want := "open one over its run: tfk8s tensorboard alpha/" + alphaRun
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want an error %q:\n%s", want, r)
		}
	})

	t.Run("PodOverTwoRunsDeletedAtTheEnd", func(t *testing.T) {
		pod, stop := f.openTensorBoard(t, "alpha/"+alphaRun, "beta", "--ttl", "20m")
		secret := waitSecret(t, f.ns, pod.Name)
		r := stop()
		t.Logf("tfk8s tensorboard alpha/%s beta, cancelled once its pod existed:\n%s", alphaRun, r)

		type mirror struct{ from, to string }
		var got []mirror
		for _, c := range pod.Spec.Containers {
			if c.Name == "tensorboard" {
				continue
			}
			got = append(got, mirror{c.Command[3], c.Command[5]})
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != secret.Name {
					t.Errorf("%s: env %+v, want a SecretKeyRef to the pod's Secret %s", c.Name, e, secret.Name)
				}
			}
		}
		if len(got) != 2 ||
			!strings.HasSuffix(got[0].from, "/"+f.ns+"/alpha/"+alphaRun+"/") || got[0].to != "/tensorboard/alpha-"+alphaRun ||
			!strings.HasSuffix(got[1].from, "/"+f.ns+"/beta/"+betaRun+"/") || got[1].to != "/tensorboard/beta-"+betaRun {
			t.Errorf("mirrors %+v, want alpha/%s then beta/%s, each into its <job>-<run>", got, alphaRun, betaRun)
		}
		if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 1200 {
			t.Errorf("activeDeadlineSeconds = %v, want 1200 (--ttl 20m)", d)
		}
		if want := "Created pod " + f.ns + "/" + pod.Name; !strings.Contains(r.stderr, want) {
			t.Errorf("want %q announced:\n%s", want, r)
		}
		if _, err := clientset.CoreV1().Pods(f.ns).Get(context.Background(), pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s after the command ended: %v, want it deleted", pod.Name, err)
		}
		if o := secret.OwnerReferences; len(o) != 1 || o[0].UID != pod.UID || string(secret.Data[tfjob.SecretKeyEndpoint]) == "" {
			t.Errorf("secret %s: owners %+v, endpoint %q; want the pod its owner and the S3 settings", secret.Name, o, secret.Data[tfjob.SecretKeyEndpoint])
		}
	})

	t.Run("RunsOfOneJobReadWithItsSecret", func(t *testing.T) {
		pod, stop := f.openTensorBoard(t, "alpha/"+alphaRun)
		r := stop()
		want := alpha.Spec.Storage.SecretRef.Name
		if got := pod.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name; got != want {
			t.Errorf("mirror reads Secret %s, want the job's %s:\n%s", got, want, r)
		}
	})

	t.Run("RunsOnlyFlagsRefusedBesideAJobsOwn", func(t *testing.T) {
		f.mustSucceed("submit", code, "--name", "gamma", "--image", "tf", "--tensorboard", "--artifacts", "logs", "--", "python3", "train.py")
		r := f.tfk8s("tensorboard", "gamma", "--ttl", "5m")
		want := "--ttl: job " + f.ns + "/gamma has its own TensorBoard, which the controller runs"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want an error %q:\n%s", want, r)
		}
	})

	t.Run("UnknownRunNamed", func(t *testing.T) {
		r := f.tfk8s("tensorboard", "alpha", "beta", "nosuchjob")
		if r.code == 0 || !strings.Contains(r.stderr, "nosuchjob") {
			t.Errorf("want an error naming the run nosuchjob:\n%s", r)
		}
	})
}

// openTensorBoard starts tfk8s tensorboard over runs and waits for its pod, at most
// 30 s, failing if the command ended first; stop ends the command as Ctrl-C does.
func (f *fixture) openTensorBoard(t *testing.T, args ...string) (pod *corev1.Pod, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- f.tfk8sContext(ctx, append([]string{"tensorboard", "--timeout", "2m"}, args...)...) }()
	stop = sync.OnceValue(func() result {
		cancel()
		return <-done
	})
	t.Cleanup(func() { stop() })
	return waitTensorBoardPod(t, f.ns, done), stop
}

// waitTensorBoardPod waits for the pod of tfk8s tensorboard over runs.
func waitTensorBoardPod(t *testing.T, ns string, done <-chan result) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: tensorboard.LabelRuns})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 {
			return &pods.Items[0]
		}
		select {
		case r := <-done:
			t.Fatalf("tfk8s tensorboard ended before its pod existed:\n%s", r)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("no pod labelled %s in %s after 30s", tensorboard.LabelRuns, ns)
	return nil
}

// waitSecret waits for the pod's own Secret, at most 30 s.
func waitSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := clientset.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case err == nil:
			return s
		case !apierrors.IsNotFound(err) || time.Now().After(deadline):
			t.Fatalf("secret %s/%s: %v", ns, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
