// Package agent is the tfk8s agent, the small static binary that runs in every
// container of a TFJob with code, data or artifacts. The controller's init container
// copies it into a shared volume (`tfk8s-agent install DIR`), and the training
// container's command runs under it (`tfk8s-agent run -- COMMAND ARGS...`), which:
//
//  1. fetches the code archive (TFK8S_CODE_SOURCE), checks its SHA-256
//     (TFK8S_CODE_SHA256, else the digest in its sha256-<hex>.tar.gz name) and unpacks
//     it into TFK8S_CODE_PATH (default /workspace);
//  2. copies each data prefix of TFK8S_DATA (a JSON list of {"source", "path"}) into
//     its directory;
//  3. starts the command in its own process group, in TFK8S_WORKDIR, else the code
//     path when there is code; its output goes to the agent's stdout and to
//     TFK8S_LOG_DIR/TFK8S_CONTAINER_NAME.log (default /tfk8s/logs/tensorflow.log);
//  4. forwards SIGTERM and SIGINT to the command's process group;
//  5. uploads the changed files of TFK8S_ARTIFACTS_PATHS (a JSON list of absolute
//     paths) and the log every TFK8S_ARTIFACTS_INTERVAL (0: only at the end), right
//     away on SIGTERM, and once more when the command has exited, within
//     TFK8S_FINAL_UPLOAD_TIMEOUT (default 100s) of SIGTERM or of the exit, to
//     <TFK8S_ARTIFACTS_DESTINATION>/<TFK8S_NAMESPACE>/<TFK8S_JOB_NAME>/<TFK8S_REPLICA>/
//     artifacts/<path> and .../logs/<container>.log, then manifest.json;
//  6. exits with the command's exit code, or 128+N when signal N killed it.
//
// Storage errors while the command runs are retried and logged, never fatal to it.
// Local files are never deleted. Failures before the command starts exit with the
// codes in exitcodes.go.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// finalBackoff retries until the final upload's deadline.
var finalBackoff = storage.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second}

// Run carries out `tfk8s-agent run` with cfg and returns the agent's exit code. stdout
// and stderr are the agent's own.
func Run(cfg Config, stdout, stderr io.Writer) int {
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "tfk8s-agent: creating log directory: %v\n", err)
		return ExitInternal
	}
	logFile, err := os.OpenFile(cfg.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "tfk8s-agent: opening log file: %v\n", err)
		return ExitInternal
	}
	defer logFile.Close()
	log := &logger{out: teeWriter{stderr, logFile}}

	// Signals are caught from the start: a pod deleted while fetching stops at once.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var client *storage.Client
	var up *uploader
	if cfg.usesStorage() {
		if client, err = storage.New(cfg.Storage); err != nil {
			log.Printf("%v", err)
			return ExitUsage
		}
	}
	if cfg.ArtifactsDestination != "" {
		if up, err = newUploader(client, cfg, log); err != nil {
			log.Printf("%v", err)
			return ExitUsage
		}
	}

	fetched := make(chan error, 1)
	go func() { fetched <- prepare(ctx, client, cfg, up, log) }()
	select {
	case sig := <-signals:
		cancel()
		<-fetched
		log.Printf("%v before the command started: exiting", sig)
		return 128 + int(sig.(syscall.Signal))
	case err := <-fetched:
		if err != nil {
			return exitFor(err, log)
		}
	}

	dir := cfg.WorkDir
	if dir == "" && cfg.CodeSource != "" {
		dir = cfg.CodePath
	}
	log.Printf("starting %q in %s", cfg.Command, displayDir(dir))
	c, err := startCommand(cfg.Command, dir, teeWriter{stdout, logFile}, teeWriter{stderr, logFile})
	if err != nil {
		return exitFor(err, log)
	}

	syncNow := make(chan struct{}, 1)
	periodicDone := make(chan struct{})
	if up != nil {
		go func() { defer close(periodicDone); up.run(ctx, cfg.ArtifactsInterval, syncNow) }()
	} else {
		close(periodicDone)
	}

	var deadline time.Time // of the final upload, set by the first SIGTERM
wait:
	for {
		select {
		case sig := <-signals:
			s := sig.(syscall.Signal)
			log.Printf("forwarding %v to the command", s)
			if err := c.signal(s); err != nil {
				log.Printf("forwarding %v: %v", s, err)
			}
			if s == syscall.SIGTERM && deadline.IsZero() {
				deadline = time.Now().Add(cfg.FinalUploadTimeout)
				select {
				case syncNow <- struct{}{}:
				default:
				}
			}
		case <-c.done:
			break wait
		}
	}
	code := c.exitCode()
	log.Printf("command exited with code %d", code)
	if c.err != nil && code == ExitInternal {
		log.Printf("waiting for the command: %v", c.err)
	}
	cancel() // stop the periodic uploads; an upload in progress is cut short
	<-periodicDone
	if up != nil {
		if deadline.IsZero() {
			deadline = time.Now().Add(cfg.FinalUploadTimeout)
		}
		finalUpload(up, deadline, code, log)
	}
	return code
}

// prepare fetches code and data, and reads the manifest of an earlier run.
func prepare(ctx context.Context, client *storage.Client, cfg Config, up *uploader, log *logger) error {
	if cfg.CodeSource != "" {
		if err := fetchCode(ctx, client, cfg, log); err != nil {
			return err
		}
	}
	if err := fetchData(ctx, client, cfg, log); err != nil {
		return err
	}
	if up != nil {
		up.resume(ctx)
	}
	return nil
}

// finalUpload makes the last upload, retrying until the deadline.
func finalUpload(up *uploader, deadline time.Time, code int, log *logger) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	up.client = up.client.WithBackoff(finalBackoff) // the periodic uploads are over
	for {
		err := up.sync(ctx, true, &code)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			log.Printf("final upload incomplete at its deadline: %v", err)
			return
		}
		// A sync stops at its first storage error: go on until the deadline.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// exitFor logs a failure before the command started and returns its exit code.
func exitFor(err error, log *logger) int {
	log.Printf("%v", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitInternal
}

// displayDir names a working directory for the log.
func displayDir(dir string) string {
	if dir == "" {
		return "the agent's working directory"
	}
	return dir
}
