package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

const submitLong = `Submit a TFJob. DIR, if given, is packed as a tar.gz (honouring .tfk8signore) and
uploaded to s3://<bucket>/code/sha256-<digest>.tar.gz, unless that archive is there
already; every replica gets it unpacked in /workspace before its command starts.
--data DIR is uploaded likewise under datasets/; --artifacts paths, and the logs, are
backed up to s3://<bucket>/runs/<namespace>/<job>/<replica>/ while the job runs.

The S3 endpoint and bucket come from --s3-endpoint and --s3-bucket, else
TFK8S_S3_ENDPOINT and TFK8S_S3_BUCKET, else ~/.tfk8s/config; the credentials from
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else ~/.tfk8s/config. They reach the pods
through a Secret in the job's namespace, never through the TFJob.

-f takes a TFJob manifest, tfk8s's or Kubeflow's (kubeflow.org/v1, converted); the
flags given override it.`

const submitExample = `  tfk8s submit ./mnist --name mnist --image tensorflow/tensorflow:2.16.1 \
      --ps 2 --workers 4 --artifacts model -- python3 train.py --epochs 10
  tfk8s submit -f kubeflow-tfjob.yaml --workers 8
  tfk8s submit ./mnist --name mnist --image tf:2.16 --dry-run -o yaml -- python3 train.py`

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

func newRenderCommand(o *rootOptions) *cobra.Command {
	f := &submitFlags{}
	cmd := &cobra.Command{
		Use:   "render [DIR] --name NAME --image IMAGE [flags] -- COMMAND [ARGS...]",
		Short: "Print the TFJob submit would create (submit --dry-run -o yaml)",
		RunE: func(cmd *cobra.Command, args []string) error {
			f.dryRun = true
			return o.submit(cmd, f, args)
		},
	}
	f.addFlags(cmd)
	_ = cmd.Flags().MarkHidden("dry-run")
	return cmd
}

// submit checks everything it can before touching S3 or the cluster, then uploads,
// then creates the Secret and the TFJob, so that an error leaves nothing half-made:
// no TFJob without its code, no new Secret without its TFJob.
func (o *rootOptions) submit(cmd *cobra.Command, f *submitFlags, args []string) error {
	ctx := cmd.Context()
	if f.dryRun && f.output == "" {
		f.output = outputYAML
	}
	if err := checkOutput(f.output, "", outputYAML, outputJSON); err != nil {
		return err
	}
	a, err := parseArgs(cmd, args)
	if err != nil {
		return err
	}
	p, err := f.params(cmd, a.command)
	if err != nil {
		return err
	}
	if a.dir != "" {
		if err := checkDir("DIR", a.dir); err != nil {
			return err
		}
	}
	localData := f.data != "" && len(p.Data) == 0
	if localData {
		if err := checkDir("--data", f.data); err != nil {
			return err
		}
	}
	var base *tfv1.TFJob
	if f.file != "" {
		if base, err = readManifest(f.file, o.env.In); err != nil {
			return err
		}
	}
	if o.namespaceGiven() || base == nil || base.Namespace == "" {
		if p.Namespace, err = o.namespace(); err != nil {
			return err
		}
	}

	// Storage: needed to ship code or data, or to back up artifacts.
	var cfg storage.Config
	usesStorage := a.dir != "" || f.data != "" || len(f.artifacts) > 0 ||
		(base != nil && base.Spec.Storage == nil && (base.Spec.Code != nil || len(base.Spec.Data) > 0 || base.Spec.Artifacts != nil))
	if usesStorage {
		if cfg, err = o.storageConfig(); err != nil {
			return err
		}
		if err := requireBucket(cfg); err != nil {
			return err
		}
		secret := constructStorageSecret("", cfg, f.clusterEndpoint)
		p.SecretName = secret.Name
		if base == nil || base.Spec.Artifacts == nil {
			p.ArtifactsDestination = storage.URI{Bucket: cfg.Bucket, Key: defaultArtifactsPrefix}.String()
		}
	}

	// Pack the code and scan the data: their digests name them in the job. A tree
	// unchanged since it was last stored is known by its digest without reading it.
	cache := pack.NewDigestCache(o.env.DigestCacheFile)
	var archive codeArchive
	if a.dir != "" {
		if archive, err = packCode(a.dir, cache); err != nil {
			return err
		}
		defer archive.Remove()
		p.Code = &tfv1.Code{
			Source: storage.URI{Bucket: cfg.Bucket, Key: archive.Key(codePrefix)}.String(),
			SHA256: archive.SHA256,
			Path:   defaultCodePath,
		}
	}
	var data dataSet
	if localData {
		if data, err = scanDataCached(f.data, cache); err != nil {
			return err
		}
		p.Data = []tfv1.DataSource{{Source: data.prefix(cfg.Bucket).String(), Path: defaultDataPath}}
	}

	job, err := buildJob(base, p)
	if err != nil {
		return err
	}
	if f.dryRun {
		return printObject(o.env.Out, job, f.output)
	}

	cs, err := o.clients()
	if err != nil {
		return err
	}
	var s3 *storage.Client
	if usesStorage {
		if s3, err = storage.New(cfg); err != nil {
			return err
		}
		if err := s3.CheckBucket(ctx, cfg.Bucket); err != nil {
			return err
		}
	}
	// The API server checks the job before anything is uploaded: a name taken, a
	// spec refused.
	if err := cs.client.Create(ctx, job.DeepCopy(), client.DryRunAll); err != nil {
		return fmt.Errorf("creating tfjob %s: %w", job.Name, err)
	}
	if a.dir != "" {
		if _, err := uploadCode(ctx, s3, &archive, storage.MustParseURI(job.Spec.Code.Source), o.env.ErrOut); err != nil {
			return err
		}
		archive.remember()
	}
	if localData {
		if _, err := uploadData(ctx, s3, data, cfg.Bucket, o.env.ErrOut); err != nil {
			return err
		}
		data.remember(cache)
	}
	if err := o.createJob(ctx, cs, job, cfg, f); err != nil {
		return err
	}
	if f.follow {
		inJobNamespace := *cs
		inJobNamespace.namespace = job.Namespace
		l := &jobLogs{root: o, cs: &inJobNamespace, name: job.Name, out: &lineWriter{w: o.env.Out}, errOut: o.env.ErrOut}
		if err := l.follow(ctx); err != nil {
			fmt.Fprintf(o.env.ErrOut, "following logs: %v\n", err)
		}
	}
	if f.wait || f.follow {
		if _, err := waitForJob(ctx, cs.client, job.Namespace, job.Name, finished, 0); err != nil {
			return err
		}
		fmt.Fprintf(o.env.Out, "tfjob.tfk8s.io/%s succeeded\n", job.Name)
	}
	return nil
}

// createJob creates the storage Secret, if the job uses one, and the job. A Secret
// created for the job is deleted again if the job cannot be.
func (o *rootOptions) createJob(ctx context.Context, cs *clients, job *tfv1.TFJob, cfg storage.Config, f *submitFlags) error {
	var action secretAction
	var secretName string
	if job.Spec.Storage != nil && cfg.Endpoint != "" {
		secret := constructStorageSecret(job.Namespace, cfg, f.clusterEndpoint)
		secretName = secret.Name
		var err error
		if action, err = ensureSecret(ctx, cs.client, secret); err != nil {
			return err
		}
		fmt.Fprintf(o.env.Out, "secret/%s %s\n", secret.Name, action)
	}
	if err := cs.client.Create(ctx, job); err != nil {
		err = fmt.Errorf("creating tfjob %s: %w", job.Name, err)
		if action == secretCreated {
			secret := constructStorageSecret(job.Namespace, cfg, f.clusterEndpoint)
			if derr := cs.client.Delete(ctx, secret); derr != nil {
				err = errors.Join(err, fmt.Errorf("deleting secret %s again: %w", secretName, derr))
			}
		}
		return err
	}
	if f.output != "" {
		return printObject(o.env.Out, forPrinting(job), f.output)
	}
	fmt.Fprintf(o.env.Out, "tfjob.tfk8s.io/%s created\n", job.Name)
	return nil
}

// readManifest reads the manifest of -f: a file, or stdin for "-".
func readManifest(name string, stdin io.Reader) (*tfv1.TFJob, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading -f %s: %w", name, err)
	}
	job, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("-f %s: %w", name, err)
	}
	return job, nil
}
