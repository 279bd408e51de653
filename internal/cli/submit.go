package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

const submitLong = `Submit a TFJob. DIR, if given, is packed as a tar.gz (honouring .tfk8signore) and
uploaded to s3://<bucket>/code/sha256-<digest>.tar.gz, unless that archive is there
already; every replica gets it unpacked in /workspace before its command starts.
--data DIR is uploaded likewise under datasets/; --artifacts paths, and the logs, are
backed up to s3://<bucket>/runs/<namespace>/<job>/<run>/<replica>/ while the job
runs, <run> naming this submission (tfk8s runs lists them).

The S3 endpoint and bucket come from --s3-endpoint and --s3-bucket, else
TFK8S_S3_ENDPOINT and TFK8S_S3_BUCKET, else ~/.tfk8s/config; the credentials from
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else ~/.tfk8s/config. They reach the pods
through the job's own Secret, <job>-storage, never through the TFJob; the job owns the
Secret, which goes when the job is deleted. Only the tfk8s agent sees them, unless
--expose-storage-credentials passes them on to the command.

Replicas are re-created after a failure worth retrying (--restart-policy ExitCode: an
exit code of 128 or more, an eviction), up to --backoff-limit restarts in all. With
--resume-from JOB, each replica starts from the artifacts the same replica of the
newest run of an earlier job stored (JOB/RUN picks a run; needs --artifacts).

-f takes a TFJob manifest, tfk8s's or Kubeflow's (kubeflow.org/v1, converted); the
flags given override it.`

const submitExample = `  tfk8s submit ./mnist --name mnist --image tensorflow/tensorflow:2.16.1 \
      --ps 2 --workers 4 --artifacts model -- python3 train.py --epochs 10
  tfk8s submit -f kubeflow-tfjob.yaml --workers 8
  tfk8s submit ./mnist --name mnist --image tf:2.16 --dry-run -o yaml -- python3 train.py
  tfk8s submit ./mnist --name mnist-v2 --image tf:2.16 --artifacts model --resume-from mnist       --backoff-limit 3 --active-deadline 12h --ttl-after-finished 24h -- python3 train.py`

func newSubmitCommand(o *rootOptions) *cobra.Command {
	f := &submitFlags{}
	cmd := &cobra.Command{
		Use:     "submit [DIR] --name NAME --image IMAGE [flags] -- COMMAND [ARGS...]",
		Short:   "Ship code and data to S3 and submit a TFJob",
		Long:    submitLong,
		Example: submitExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.submit(cmd, f, args)
		},
	}
	f.addFlags(cmd)
	return cmd
}

const renderLong = `Print the TFJob submit would create (submit --dry-run -o yaml).

With --to tfk8s, print the tfk8s.io TFJob a Kubeflow TFJob (kubeflow.org/v1) moves to:
the one of -f FILE, or the live one named JOB. Kubeflow's v1.9 defaults are written
out, so that the job behaves as it did; submit's other flags are not taken (give them to
tfk8s submit -f with the manifest printed). See docs/kubeflow.md.`

const renderExample = `  tfk8s render ./mnist --name mnist --image tf:2.16 -- python3 train.py
  tfk8s render --to tfk8s kubeflow.org/mnist > mnist.yaml
  tfk8s render --to tfk8s -f mnist-kubeflow.yaml`

func newRenderCommand(o *rootOptions) *cobra.Command {
	f := &submitFlags{}
	var to string
	cmd := &cobra.Command{
		Use:     "render [DIR] --name NAME --image IMAGE [flags] -- COMMAND [ARGS...] | render --to tfk8s (-f FILE | JOB)",
		Short:   "Print the TFJob submit would create (submit --dry-run -o yaml), or a Kubeflow TFJob moved to tfk8s.io",
		Long:    renderLong,
		Example: renderExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("to") {
				return o.renderMoved(cmd, to, f, args)
			}
			f.dryRun = true
			return o.submit(cmd, f, args)
		},
	}
	f.addFlags(cmd)
	cmd.Flags().StringVar(&to, "to", "", "print the Kubeflow TFJob of -f FILE, or the live one named JOB, as the TFJob of this API: tfk8s")
	_ = cmd.Flags().MarkHidden("dry-run")
	return cmd
}

// submit checks everything it can before touching S3 or the cluster, then uploads,
// then creates the Secret and the TFJob, so that an error leaves nothing half-made:
// no TFJob without its code, no new Secret without its TFJob.
func (o *rootOptions) submit(cmd *cobra.Command, f *submitFlags, args []string) error {
	ctx := cmd.Context()
	end := o.step("prepare")
	s, err := o.prepareSubmission(cmd, f, args)
	end()
	if err != nil {
		return err
	}
	defer s.archive.Remove()
	if f.dryRun {
		return printObject(o.env.Out, s.job, f.output)
	}
	if s.unverified != "" && !f.yes {
		// Anyone with the bucket's keys can rewrite a record: shown, not run, and the
		// exit code says so.
		if err := printObject(o.env.Out, s.job, cmp.Or(f.output, outputYAML)); err != nil {
			return err
		}
		printAsFlags(o.env.ErrOut, s.job)
		return &notSubmittedError{fromRun: f.fromRun, reason: s.unverified}
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	// The creator is who the API server says this is, not what a manifest or a run
	// record names: the notebooks' policy requires it, and trusts it on updates.
	end = o.step("creator review")
	jobs.StampCreator(ctx, cs.Client, s.job)
	end()
	end = o.step("check")
	err = o.checkSubmission(ctx, cs, s)
	end()
	if err != nil {
		return err
	}
	end = o.step("upload")
	err = o.upload(ctx, s)
	end()
	if err != nil {
		return err
	}
	// With -o, stdout holds the job alone, for a program to read.
	notes := o.env.Out
	if f.output != "" {
		notes = o.env.ErrOut
	}
	end = o.step("create")
	err = o.createJob(ctx, cs, s.job, s.secret, notes)
	end()
	if err != nil {
		return err
	}
	if f.output == "" {
		fmt.Fprintf(notes, "tfjob.tfk8s.io/%s created\n", s.job.Name)
	} else if err := printObject(o.env.Out, jobspec.ForPrinting(s.job), f.output); err != nil {
		return err
	}
	if s.s3 != nil {
		// The job runs without its record; tfk8s runs then finds it by its files.
		end = o.step("run record")
		if err := jobs.WriteRunRecord(ctx, s.s3, s.job, time.Now()); err != nil {
			fmt.Fprintf(o.env.ErrOut, "warning: %v\n", err)
		}
		end()
	}
	return o.awaitJob(ctx, cs, s.job, f)
}

// submission is a job on its way: the TFJob, and what it ships to S3.
type submission struct {
	job *tfv1.TFJob
	p   jobspec.Values
	// cfg is the S3 storage, if usesStorage: to ship code or data, or to back up
	// artifacts.
	cfg         storage.Config
	usesStorage bool
	s3          *storage.Client
	// userSecret is the Secret of --storage-secret, the user's own: checked, and
	// neither made by submit nor owned by the job.
	userSecret string
	// dir is the code directory, "" for none; archive its archive.
	dir     string
	archive storage.CodeArchive
	// localData is whether data is a local directory to upload.
	localData bool
	data      storage.DataSet
	cache     pack.DigestCache
	// secret is the storage Secret submit makes for the job; nil for none.
	secret *corev1.Secret
	// unverified, set by --from-run, says why the run's job is shown rather than
	// submitted unless --yes.
	unverified string
}

// prepareSubmission checks the flags and arguments, reads the manifest, packs the code
// and scans the data, and builds the job: all that needs neither S3 nor the cluster.
// Each step is one function; the record and the creation follow in submit.
func (o *rootOptions) prepareSubmission(cmd *cobra.Command, f *submitFlags, args []string) (*submission, error) {
	s, a, err := o.readInputs(cmd, f, args)
	if err != nil {
		return nil, err
	}
	base, err := o.resolveBase(cmd.Context(), f, s)
	if err != nil {
		return nil, err
	}
	if err := o.resolveStorage(cmd, f, s, base, a.command); err != nil {
		return nil, err
	}
	if err := s.scanTrees(f.p.Data); err != nil {
		return nil, err
	}
	if err := s.build(base); err != nil {
		s.archive.Remove()
		return nil, err
	}
	s.secret = storageSecret(s.job, s.cfg, s.userSecret, f.clusterEndpoint)
	return s, nil
}

// checkSubmission checks what needs S3 and the cluster before anything is uploaded:
// the bucket, the job to resume from, and the job itself (a name taken, a spec
// refused), by the API server.
func (o *rootOptions) checkSubmission(ctx context.Context, cs *clients, s *submission) error {
	var err error
	if s.usesStorage {
		if s.s3, err = storage.New(s.cfg); err != nil {
			return err
		}
		s.s3 = s.s3.WithKeysFrom(storage.KeysSource(o.env.Getenv, o.env.ConfigFile))
		if err := s.s3.CheckRoot(ctx, s.cfg.Root()); err != nil {
			return err
		}
	}
	if s.userSecret != "" {
		if err := jobs.CheckStorageSecret(ctx, cs.Client, s.job.Namespace, s.userSecret); err != nil {
			return err
		}
	}
	if s.p.ResumeFrom != "" {
		c := s.s3
		if c == nil {
			if c, err = o.localStorage(); err != nil {
				return fmt.Errorf("--resume-from %s: %w", s.p.ResumeFrom, err)
			}
		}
		if err := jobs.CheckResumeFrom(ctx, cs, c, s.job, s.p.ResumeFrom); err != nil {
			return err
		}
	}
	if err := jobs.CheckVolumes(ctx, cs.Client, s.job); err != nil {
		return err
	}
	if err := cs.Client.Create(ctx, s.job.DeepCopy(), client.DryRunAll); err != nil {
		return fmt.Errorf("creating tfjob %s: %w", s.job.Name, err)
	}
	return nil
}

// upload stores the code and the data, unless S3 has them already.
func (o *rootOptions) upload(ctx context.Context, s *submission) error {
	if s.dir != "" {
		if _, err := storage.UploadCode(ctx, s.s3, &s.archive, storage.MustParseURI(s.job.Spec.Code.Source), o.env.ErrOut); err != nil {
			return err
		}
		s.archive.Remember()
	}
	if s.localData {
		if _, err := storage.UploadData(ctx, s.s3, s.data, s.cfg.Root(), o.env.ErrOut); err != nil {
			return err
		}
		s.data.Remember(s.cache)
	}
	return nil
}

// awaitJob follows the new job's logs and waits for it to finish, as the flags ask.
func (o *rootOptions) awaitJob(ctx context.Context, cs *clients, job *tfv1.TFJob, f *submitFlags) error {
	if f.follow {
		l := &jobs.Logs{Storage: o.storage(), Clients: cs.In(job.Namespace), Name: job.Name, Out: &jobs.LineWriter{W: o.env.Out}, ErrOut: o.env.ErrOut}
		if err := l.Follow(ctx); err != nil {
			fmt.Fprintf(o.env.ErrOut, "following logs: %v\n", err)
		}
	}
	if f.wait || f.follow {
		if _, err := waitForJob(ctx, cs.Client, job.Namespace, job.Name, finished, 0); err != nil {
			return err
		}
		fmt.Fprintf(o.env.Out, "tfjob.tfk8s.io/%s succeeded\n", job.Name)
	}
	return nil
}

// createJob creates the job's storage Secret, if submit makes one (storageSecret),
// then the job, then makes the job the Secret's owner, so that the Secret goes with
// the job. The Secret is deleted again if the job cannot be created. notes is told
// of the Secret created.
func (o *rootOptions) createJob(ctx context.Context, cs *clients, job *tfv1.TFJob, secret *corev1.Secret, notes io.Writer) error {
	if secret != nil {
		var err error
		if secret, err = jobs.CreateStorageSecret(ctx, cs.Client, secret); err != nil {
			return err
		}
		fmt.Fprintf(notes, "secret/%s created\n", secret.Name)
	}
	if err := cs.Client.Create(ctx, job); err != nil {
		err = fmt.Errorf("creating tfjob %s: %w", job.Name, err)
		if secret != nil {
			err = errors.Join(err, jobs.DeleteOwnSecret(ctx, cs.Client, secret))
		}
		return err
	}
	if secret != nil {
		return jobs.OwnSecret(ctx, cs.Client, secret, job)
	}
	return nil
}
