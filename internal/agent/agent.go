// Package agent is the tfk8s agent, the small static binary that runs in every
// container of a TFJob with code, data or artifacts. The controller's init container
// copies it into a shared volume (`tfk8s-agent install DIR`), and the training
// container's command runs under it (`tfk8s-agent run -- COMMAND ARGS...`), which:
//
//  0. finds the replica's earlier attempts in S3 and claims the next attempt number
//     by writing its record (<replica>/attempts/<n>/attempt.json);
//  1. fetches the code archive (TFK8S_CODE_SOURCE), checks its SHA-256
//     (TFK8S_CODE_SHA256, else the digest in its sha256-<hex>.tar.gz name) and unpacks
//     it into TFK8S_CODE_PATH (default /workspace);
//  2. copies each data prefix of TFK8S_DATA (a JSON list of {"source", "path"}) into
//     its directory;
//     and verifies a data set stored by tfk8s submit against its manifest; a retried
//     attempt (or the first one of a job resumed from another, TFK8S_ARTIFACTS_RESUME_FROM)
//     restores the artifact paths' files that are missing locally;
//  3. starts the command in its own process group, in TFK8S_WORKDIR, else the code
//     path when there is code, without the storage credentials: not in its
//     environment, and not in the agent's, which is not dumpable and which the command,
//     started without CAP_SYS_PTRACE, cannot read (see confine.go); unless
//     TFK8S_EXPOSE_STORAGE_CREDENTIALS=true. Its output goes to the agent's
//     stdout and to TFK8S_LOG_DIR/TFK8S_CONTAINER_NAME.log (default
//     /tfk8s/logs/tensorflow.log);
//  4. forwards SIGTERM and SIGINT to the command's process group;
//  5. uploads the changed files of TFK8S_ARTIFACTS_PATHS (a JSON list of absolute
//     paths) and the log every TFK8S_ARTIFACTS_INTERVAL (0: only at the end), right
//     away on SIGTERM, and once more when the command has exited, within
//     TFK8S_FINAL_UPLOAD_TIMEOUT (default 100s) of SIGTERM or of the exit, to
//     <TFK8S_ARTIFACTS_DESTINATION>/<TFK8S_NAMESPACE>/<TFK8S_JOB_NAME>/<TFK8S_REPLICA>/
//     artifacts/<path> and .../attempts/<n>/logs/<container>.log, then the attempt's
//     record and manifest.json (see storage's layout.go); and reads the TensorFlow
//     event files among the artifacts as they grow, storing their step and scalars
//     in .../progress.json when they changed (progress.go), which the lead replica
//     also serves to the controller on TFK8S_PROGRESS_PORT (live.go); and samples the
//     container's cgroup, and its NVIDIA GPUs through tfk8s-nvml where installed,
//     storing its CPU, memory and GPU use in .../usage.json at every upload
//     (usage.go, cgroup.go, gpu.go);
//  6. once the command has exited, ends what it left running (SIGTERM, then SIGKILL
//     after TFK8S_CHILD_GRACE): the agent is a child subreaper, so even a daemon that
//     left the process group is found, and no orphan stays a zombie;
//  7. exits with the command's exit code, or 128+N when signal N killed it.
//
// Storage errors while the command runs are retried and logged, never fatal to it.
// Before it starts, storage refusing the credentials exits ExitStorageDenied at once.
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

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// finalBackoff retries until the final upload's deadline.
var finalBackoff = storage.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second}

// earlyUploadTimeout bounds the upload of the log when the command could not start.
const earlyUploadTimeout = 20 * time.Second

// session is one `tfk8s-agent run`.
type session struct {
	cfg     Config
	log     *logger
	reaper  *reaper
	signals chan os.Signal
	client  *storage.Client
	up      *uploader
	// stdout and stderr are the command's: the agent's own, and the log file.
	stdout, stderr io.Writer
}

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
	logOffset, _ := logFile.Seek(0, io.SeekEnd) // where this attempt's part starts
	s := &session{cfg: cfg, log: &logger{out: teeWriter{stderr, logFile}},
		stdout: teeWriter{stdout, logFile}, stderr: teeWriter{stderr, logFile}}

	// Before anything else, the agent's memory and environment, which hold the
	// storage credentials, are closed to the command.
	if err := protectMemory(); err != nil {
		s.log.Printf("warning: %v: the command may read the storage credentials from the agent's memory", err)
	}
	for _, w := range cfg.Warnings {
		s.log.Printf("warning: %s", w)
	}
	// Signals are caught from the start: a pod deleted while fetching stops at once.
	s.signals = make(chan os.Signal, 4)
	signal.Notify(s.signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(s.signals)
	if s.reaper, err = startReaper(); err != nil {
		s.log.Printf("%v: processes that leave the command's process group may outlive it", err)
	}
	defer s.reaper.close()

	if cfg.usesStorage() {
		if s.client, err = storage.New(cfg.Storage); err != nil {
			s.log.Printf("%v", err)
			return ExitUsage
		}
	}
	if cfg.ArtifactsDestination != "" {
		if s.up, err = newUploader(s.client, cfg, logOffset, s.log); err != nil {
			s.log.Printf("%v", err)
			return ExitUsage
		}
	}
	if s.up != nil && cfg.ProgressPort != 0 {
		live, err := serveLiveProgress(cfg.ProgressPort, cfg.PodUID, cfg.TotalSteps, s.log)
		if err != nil {
			s.log.Printf("%v: the job's status goes without its progress", err)
		}
		s.up.progress.live = live
		defer live.close()
	}
	if code, ok := s.prepare(); !ok {
		return code
	}
	return s.runCommand()
}

// prepare claims the attempt, fetches code and data and restores the artifacts,
// stopping early at SIGTERM or SIGINT. It returns false, with the exit code, if the
// command must not start.
func (s *session) prepare() (int, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fetched := make(chan error, 1)
	go func() { fetched <- prepare(ctx, s.client, s.cfg, s.up, s.log) }()
	select {
	case sig := <-s.signals:
		cancel()
		<-fetched
		msg := fmt.Sprintf("%v before the command started: exiting", sig)
		s.log.Printf("%s", msg)
		code := 128 + int(sig.(syscall.Signal))
		s.endEarly(code, ReasonSignaled, msg)
		return code, false
	case err := <-fetched:
		if err != nil {
			code := exitFor(err, s.log)
			s.endEarly(code, failureReasons[code], err.Error())
			return code, false
		}
	}
	return 0, true
}

// prepare claims the attempt, fetches code and data, and restores the artifacts.
func prepare(ctx context.Context, client *storage.Client, cfg Config, up *uploader, log *logger) error {
	var prev *storage.Manifest
	if up != nil {
		var err error
		if prev, err = up.begin(ctx); err != nil {
			return err
		}
	}
	if cfg.CodeSource != "" {
		if err := fetchCode(ctx, client, cfg, log); err != nil {
			return err
		}
	}
	if err := fetchData(ctx, client, cfg, log); err != nil {
		return err
	}
	if up != nil {
		return up.restore(ctx, cfg, prev)
	}
	return nil
}

// endEarly stores the log and the record of an attempt whose command never ran (not
// its artifact paths, which hold at most what was restored).
func (s *session) endEarly(code int, reason, message string) {
	if s.up == nil || !s.up.claimed() {
		return
	}
	s.up.paths = nil
	s.up.finish(code, reason, message)
	finalUpload(s.up, time.Now().Add(min(s.cfg.FinalUploadTimeout, earlyUploadTimeout)), code, s.log)
}

// runCommand runs the command to its end, with the periodic uploads, and ends the
// attempt: what the command left running, its output, the final upload.
func (s *session) runCommand() int {
	dir := s.cfg.WorkDir
	if dir == "" && s.cfg.CodeSource != "" {
		dir = s.cfg.CodePath
	}
	s.log.Printf("starting %q in %s", s.cfg.Command, displayDir(dir))
	env, err := withTFConfig(commandEnv(os.Environ(), s.cfg.ExposeStorageCredentials), s.cfg.Replica)
	if err != nil {
		s.log.Printf("%v", err)
		s.endEarly(ExitUsage, failureReasons[ExitUsage], err.Error())
		return ExitUsage
	}
	c, err := startCommand(s.reaper, s.cfg.Command, dir, env, s.stdout, s.stderr, !s.cfg.ExposeStorageCredentials)
	if err != nil {
		code := exitFor(err, s.log)
		s.endEarly(code, failureReasons[code], err.Error())
		return code
	}
	for _, msg := range c.confined.messages() {
		s.log.Printf("%s", msg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	syncNow, stop := make(chan struct{}, 1), make(chan struct{})
	periodicDone, stopUsage, usageDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	stopGPUs := func() {}
	if s.up != nil {
		s.up.started(ctx)
		stopGPUs = s.up.usage.startGPUs(nvml.Beside(), s.reaper.startSampler, s.log)
		go func() { defer close(usageDone); s.up.usage.run(stopUsage, s.log) }()
		go func() { defer close(periodicDone); s.up.run(ctx, stop, s.cfg.ArtifactsInterval, syncNow) }()
	} else {
		close(periodicDone)
		close(usageDone)
	}

	deadline := s.waitForExit(c, syncNow)
	code := c.exitCode()
	s.log.Printf("command exited with code %d", code)
	// The GPU sampler is the agent's: it ends before what the command left is ended,
	// which the cgroup's samples cover. The record ends as they do: not after the
	// drain and the upload in progress, which may take minutes of idle time.
	stopGPUs()
	left := endLeftovers(c.pgid(), s.cfg.ChildGrace, s.log)
	close(stopUsage)
	<-usageDone
	if s.up != nil {
		s.up.usage.sampleFinal(s.log)
	}
	c.drainOutput(drainTimeout(left))
	// The periodic uploads stop after the one in progress, which is not cut short: S3
	// may still complete a PUT whose client gave up, after the final upload's PUT of
	// the same key, and so put back an older log. Only the final deadline cuts it.
	if deadline.IsZero() {
		deadline = time.Now().Add(s.cfg.FinalUploadTimeout)
	}
	close(stop)
	defer time.AfterFunc(time.Until(deadline), cancel).Stop()
	<-periodicDone
	if s.up != nil {
		s.up.usage.logOOM(s.cfg.Replica, s.log)
		reason, message := commandEnd(c.status)
		s.up.finish(code, reason, message)
		finalUpload(s.up, deadline, code, s.log)
	}
	return code
}

// drainTimeout is how long the output of an exited command is read on: until every
// holder of its pipes is gone, but not for one that survived SIGKILL.
func drainTimeout(survivors []process) time.Duration {
	if len(survivors) > 0 {
		return 500 * time.Millisecond
	}
	return 5 * time.Second
}

// waitForExit forwards SIGTERM and SIGINT to the command until it exits. It returns
// the deadline of the final upload, set by the first SIGTERM, or zero.
func (s *session) waitForExit(c *child, syncNow chan<- struct{}) time.Time {
	var deadline time.Time
	for {
		select {
		case sig := <-s.signals:
			sg := sig.(syscall.Signal)
			s.log.Printf("forwarding %v to the command", sg)
			if err := c.signal(sg); err != nil {
				s.log.Printf("forwarding %v: %v", sg, err)
			}
			if sg == syscall.SIGTERM && deadline.IsZero() {
				deadline = time.Now().Add(s.cfg.FinalUploadTimeout)
				select {
				case syncNow <- struct{}{}:
				default:
				}
			}
		case <-c.done:
			return deadline
		}
	}
}

// finalUpload makes the last upload, retrying until the deadline; storage refusing the
// credentials ends it at once.
func finalUpload(up *uploader, deadline time.Time, code int, log *logger) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	up.client = up.client.WithBackoff(finalBackoff) // the periodic uploads are over
	for {
		err := up.sync(ctx, true, &code)
		if err == nil || storage.Denied(err) {
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
