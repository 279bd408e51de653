package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// EndRecordConfig configures `tfk8s-agent record`: which run's end to write, and how it
// ended. The controller sets it all in the record pod's environment.
type EndRecordConfig struct {
	Storage storage.Config
	// Run is the run's prefix, <destination>/<namespace>/<job>/<run>/.
	Run storage.URI
	End tfjob.RunEnd
}

// ParseEndRecordConfig reads the record pod's environment: the S3 settings, the job's
// destination, namespace, name and run, and the end (tfjob.EnvRunEnd, JSON).
func ParseEndRecordConfig(getenv func(string) string) (EndRecordConfig, error) {
	var c EndRecordConfig
	var errs []error
	dest, err := storage.ParseURI(getenv(tfjob.EnvArtifactsDestination))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", tfjob.EnvArtifactsDestination, err))
	}
	ns, job, run := getenv(tfjob.EnvNamespace), getenv(tfjob.EnvJobName), getenv(tfjob.EnvRun)
	if ns == "" || job == "" || !storage.IsRunID(run) {
		errs = append(errs, fmt.Errorf("the run is %s=%q %s=%q %s=%q: want a namespace, a job and a run id",
			tfjob.EnvNamespace, ns, tfjob.EnvJobName, job, tfjob.EnvRun, run))
	}
	c.Run = storage.RunPrefix(dest, ns, job, run)
	if err := json.Unmarshal([]byte(getenv(tfjob.EnvRunEnd)), &c.End); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", tfjob.EnvRunEnd, err))
	} else if c.End.State == "" {
		errs = append(errs, fmt.Errorf("%s: the end has no state", tfjob.EnvRunEnd))
	}
	if c.Storage, err = storage.LoadConfig(c.Storage, getenv, ""); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// RunEndRecord runs `tfk8s-agent record` and returns its exit code: non-zero when the end
// could not be written, so that the pod restarts and tries again.
func RunEndRecord(cfg EndRecordConfig, logOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := WriteEndRecord(ctx, cfg, logOut); err != nil {
		fmt.Fprintf(logOut, "tfk8s-agent record: %v\n", err)
		return ExitInternal
	}
	fmt.Fprintf(logOut, "tfk8s-agent record: %s: %s\n", cfg.Run.Join(storage.RunEndName), cfg.End.State)
	return 0
}

// WriteEndRecord writes the run's end record, end.json at its prefix, with the progress
// record of the run's lead replica (tfjob.LeadReplicas, the first that stored one)
// as it stands, without its series, so that tfk8s runs reads a finished run's step and
// loss with its end. A progress record that cannot be read leaves the end without it.
func WriteEndRecord(ctx context.Context, cfg EndRecordConfig, logOut io.Writer) error {
	c, err := storage.New(cfg.Storage)
	if err != nil {
		return err
	}
	if cfg.End.Lead, err = storage.ReadLeadProgress(ctx, c, cfg.Run); err != nil {
		fmt.Fprintf(logOut, "tfk8s-agent record: the end goes without the lead replica's progress: %v\n", err)
	}
	data, err := storage.Marshal(cfg.End)
	if err != nil {
		return fmt.Errorf("encoding the end: %w", err)
	}
	u := cfg.Run.Join(storage.RunEndName)
	if err := c.PutObject(ctx, u, bytes.NewReader(data), int64(len(data)), storage.UploadOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing %s: %w", u, err)
	}
	return nil
}
