package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tfk8s/tfk8s/internal/scheme"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestListNamedRunsReadsThoseAlone: the compare view's query names its runs, and
// listing them costs one LIST per run whatever else the namespace holds: the same
// answer, and the same bytes listed, with 2 runs stored as with 60.
func TestListNamedRunsReadsThoseAlone(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	c := counter.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	q := Query{Namespace: "team", Names: []string{"job-0000/00000000", "job-0001/00000001"}, Series: true}
	compare := func() (names string, lists int, listed int64) {
		t.Helper()
		counter.Reset()
		found, err := List(ctx, c, dest, nil, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range found {
			names += r.Name + "/" + r.Run + " "
		}
		return names, counter.Get("LIST"), counter.Bytes("LIST")
	}
	storeRuns(t, srv.Client(t), dest, "team", 2)
	names2, lists2, bytes2 := compare()
	storeRuns(t, srv.Client(t), dest, "team", 60)
	names60, lists60, bytes60 := compare()
	if want := "job-0000/00000000 job-0001/00000001 "; names2 != want || names60 != want {
		t.Errorf("compared %q with 2 runs stored and %q with 60, want %q", names2, names60, want)
	}
	if lists2 != 2 || lists60 != 2 || bytes60 != bytes2 {
		t.Errorf("LISTs %d and %d, bytes listed %d and %d, with 2 and 60 runs stored; want 2 LISTs each, the same bytes", lists2, lists60, bytes2, bytes60)
	}
	t.Logf("LIST bytes to compare 2 runs: %d with 2 runs stored, %d with 60", bytes2, bytes60)
}

// TestNamedPrefixes: each named run's prefix is listed once, and a legacy run's,
// its job's, holds the job's other runs, which are not listed again.
func TestNamedPrefixes(t *testing.T) {
	dest := storage.URI{Bucket: "b", Key: "runs/"}
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"two runs", []string{"mnist/0000000a", "resnet/0000000b"}, []string{"runs/team/mnist/0000000a/", "runs/team/resnet/0000000b/"}},
		{"twice the same", []string{"mnist/0000000a", "mnist/0000000a"}, []string{"runs/team/mnist/0000000a/"}},
		{"a legacy run beside its job's", []string{"mnist/0000000a", "mnist/-", "mnist-2/0000000c"}, []string{"runs/team/mnist-2/0000000c/", "runs/team/mnist/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range namedPrefixes(dest, "team", tc.names) {
				got = append(got, p.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("prefixes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupListsTheJobOnce: the run of a live job whose replicas stored where a
// controller older than runs put them is found in the one LIST of the job's prefix
// that also showed its own run missing, not in a second.
func TestLookupListsTheJobOnce(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	live := testutil.MakeTFJob("mnist", "team").Workers(1).Artifacts(dest.String(), "/logs").UID("0000000a-0000-0000-0000-000000000000").Obj()
	legacy := storage.JobPrefix(dest, "team", "mnist")
	body := `{"attempts":[{"number":1}]}`
	if err := srv.Client(t).PutObject(ctx, legacy.Join("worker-0/"+storage.ManifestName), strings.NewReader(body), int64(len(body)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	// The cluster holds the live job: a fake one, as only S3's requests are counted.
	cluster := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).Build()
	src := Source{Cluster: cluster, Storage: counter.Client(t), Destination: dest, Namespace: "team"}
	found, err := Lookup(ctx, src, Name{Job: "mnist"})
	r := found.Run
	if err == nil {
		err = found.Partial
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Prefix != legacy.String() || !r.Live {
		t.Errorf("found the run under %s (live %t), want the live job's under %s", r.Prefix, r.Live, legacy)
	}
	if n := counter.Get("LIST"); n != 1 {
		t.Errorf("%d LISTs, want 1", n)
	}
}
