package agent_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// What the command leaves running counts in the replica's usage record: its final
// sample is taken once the agent has ended them. Here a process the command left
// behind ignores SIGTERM and stamps the time every 50 ms until it is killed, a
// second after the command exited: the record ends after its last stamp, and soon
// after.
func TestRunUsageCoversWhatTheCommandLeft(t *testing.T) {
	j := newBareJob(t)
	stamps := j.path("stamps")
	script := `sh -c 'trap "" TERM; while :; do date +%s%N > "$0.new" && mv "$0.new" "$0"; sleep 0.05; done' "$STAMPS" &
		while [ ! -e "$STAMPS" ]; do sleep 0.01; done; exit 0`
	extra := []string{"STAMPS=" + stamps, tfjob.EnvChildGrace + "=1s"}
	if code := j.run(t, extra, "sh", "-c", script); code != 0 {
		t.Fatalf("agent exited %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	b, err := os.ReadFile(stamps)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("reading the last stamp %q: %v", b, err)
	}
	var u storage.Usage
	if err := json.Unmarshal([]byte(download(t, j.client, j.replicaURI(storage.UsageName))), &u); err != nil {
		t.Fatal(err)
	}
	last := time.Unix(0, ns)
	if u.Updated.Before(last) {
		t.Errorf("the usage record ends %v before the left process's last stamp, after %v running; stderr:\n%s",
			last.Sub(u.Updated).Round(time.Millisecond), last.Sub(u.Start).Round(time.Millisecond), j.stderr.String())
	}
	// Nor long after: the final sample follows the kill, not the drain of the output
	// and the uploads. The left process stamps every 50 ms; a second covers a slow
	// fork of date under load.
	if gap, most := u.Updated.Sub(last), 50*time.Millisecond+time.Second; gap > most {
		t.Errorf("the usage record ends %v after the left process's last stamp, want at most %v; stderr:\n%s",
			gap.Round(time.Millisecond), most, j.stderr.String())
	}
	t.Logf("%d samples over %v; the left process stamped until %v after the first, %v before the last",
		u.Samples, u.Updated.Sub(u.Start).Round(time.Millisecond), last.Sub(u.Start).Round(time.Millisecond),
		u.Updated.Sub(last).Round(time.Millisecond))
}

// The final sample is not held back by output still being read: here the test holds
// the command's stdout open after it exits, as a process the agent cannot end
// would, and the agent reads on until its drain timeout. The record ends when the
// command did, not the drain's seconds later.
func TestRunUsageEndsBeforeASlowDrain(t *testing.T) {
	j := newBareJob(t)
	pidFile, goFile := j.path("pid"), j.path("go")
	script := `echo $$ > "$PIDFILE.new" && mv "$PIDFILE.new" "$PIDFILE"; while [ ! -e "$GOFILE" ]; do sleep 0.01; done`
	j.start(t, []string{"PIDFILE=" + pidFile, "GOFILE=" + goFile}, "sh", "-c", script)
	var pid []byte
	eventually(t, 30*time.Second, "the command's pid", func() bool {
		var err error
		pid, err = os.ReadFile(pidFile)
		return err == nil
	})
	out, err := os.OpenFile("/proc/"+strings.TrimSpace(string(pid))+"/fd/1", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("opening the command's stdout: %v", err)
	}
	defer out.Close()
	exited := time.Now()
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := j.wait(t, time.Minute); code != 0 {
		t.Fatalf("agent exited %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	drained := time.Since(exited)
	var u storage.Usage
	if err := json.Unmarshal([]byte(download(t, j.client, j.replicaURI(storage.UsageName))), &u); err != nil {
		t.Fatal(err)
	}
	if late := u.Updated.Sub(exited); late > drained/2 {
		t.Errorf("the usage record ends %v after the command was let exit, the agent %v after; want it well before the drain's end",
			late.Round(time.Millisecond), drained.Round(time.Millisecond))
	}
	t.Logf("the record ends %v after the command was let exit, the agent %v after",
		u.Updated.Sub(exited).Round(time.Millisecond), drained.Round(time.Millisecond))
}
