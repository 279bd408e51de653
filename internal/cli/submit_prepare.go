package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// readInputs checks the output format, the arguments and the flags, and the local
// directories they name, into a submission and the arguments.
func (o *rootOptions) readInputs(cmd *cobra.Command, f *submitFlags, args []string) (*submission, submitArgs, error) {
	if f.dryRun && f.output == "" {
		f.output = outputYAML
	}
	if err := checkOutput(f.output, "", outputYAML, outputJSON); err != nil {
		return nil, submitArgs{}, invalidJob(err, "-o")
	}
	a, err := parseArgs(cmd, args)
	if err != nil {
		return nil, a, invalidJob(err, "DIR")
	}
	s := &submission{dir: a.dir, cache: pack.NewDigestCache(o.env.DigestCacheFile)}
	if s.p, err = f.params(a.command); err != nil {
		return nil, a, invalidJob(err, "")
	}
	if a.dir != "" {
		if err := checkDir("DIR", a.dir); err != nil {
			return nil, a, invalidJob(err, "DIR")
		}
	}
	s.localData = f.p.Data != "" && len(s.p.Data) == 0
	if s.localData {
		if err := checkDir("--data", f.p.Data); err != nil {
			return nil, a, invalidJob(err, "--data")
		}
	}
	return s, a, nil
}

// resolveBase reads the job the flags apply over (-f, --from-run; nil for neither),
// and the namespace: the flag's or the context's, unless the manifest names one.
func (o *rootOptions) resolveBase(ctx context.Context, f *submitFlags, s *submission) (*tfv1.TFJob, error) {
	base, err := o.readBase(ctx, f)
	if err != nil {
		return nil, err
	}
	s.unverified = base.unverified
	if o.namespaceGiven() || base.job == nil || base.job.Namespace == "" {
		if s.p.Namespace, err = o.namespace(); err != nil {
			return nil, err
		}
	}
	return base.job, nil
}

// resolveStorage decides whether the job keeps anything in S3 and, if so, reads the
// S3 settings and sets the job's storage Secret and artifacts' destination.
func (o *rootOptions) resolveStorage(cmd *cobra.Command, f *submitFlags, s *submission, base *tfv1.TFJob, command []string) error {
	if err := o.resolveStorageSecret(cmd, f); err != nil {
		return invalidJob(err, "--storage-secret")
	}
	s.usesStorage = s.dir != "" || f.p.Data != "" || len(f.p.Artifacts) > 0 ||
		(base != nil && base.Spec.Storage == nil && tfjob.UsesStorage(base)) ||
		((base == nil || base.Spec.Storage == nil) && hasCommand(base, command) && o.storageKnown())
	if f.storageSecret != "" && !s.usesStorage && cmd.Flags().Changed("storage-secret") {
		return invalidJob(fmt.Errorf("--storage-secret %s: the job keeps nothing in S3 (no DIR, --data or --artifacts), so its pods read no S3 settings", f.storageSecret), "")
	}
	if !s.usesStorage {
		return nil
	}
	var err error
	if s.cfg, err = o.storageConfig(); err != nil {
		return err
	}
	if err := jobs.RequireBucket(s.cfg); err != nil {
		return err
	}
	s.p.SecretName = jobs.StorageSecretName(cmp.Or(s.p.Name, baseName(base)))
	if s.userSecret = f.storageSecret; s.userSecret != "" {
		s.p.SecretName = s.userSecret
	}
	if base == nil || base.Spec.Artifacts == nil {
		s.p.ArtifactsDestination = s.cfg.Root().Join(jobs.DefaultArtifactsPrefix).String()
	}
	return nil
}

// build makes the job of the parameters over base, and refuses a TensorBoard that
// would have no summaries to show.
func (s *submission) build(base *tfv1.TFJob) error {
	var err error
	if s.job, err = jobspec.Build(base, s.p); err != nil {
		return invalidJob(err, "")
	}
	if tb := s.job.Spec.TensorBoard; tb != nil && tb.Enabled && tb.LogDir == "" && !jobspec.HasVolume(s.job, "logs") &&
		(s.job.Spec.Artifacts == nil || len(s.job.Spec.Artifacts.Paths) == 0) {
		return invalidJob(errors.New("--tensorboard: the job stores no summaries for it to show; add --artifacts with the directory your program writes them to (e.g. --artifacts logs)"), "")
	}
	return nil
}

// storageSecret is the Secret submit makes for the job, holding the S3 settings of cfg
// as the job's pods reach them (clusterEndpoint, else cfg's). It makes none when the
// job keeps nothing in S3, when its pods read the user's own Secret (userSecret, of
// --storage-secret), or when a manifest names another Secret.
func storageSecret(job *tfv1.TFJob, cfg storage.Config, userSecret, clusterEndpoint string) *corev1.Secret {
	st := job.Spec.Storage
	if st == nil || cfg.Endpoint == "" || userSecret != "" || st.SecretRef.Name != jobs.StorageSecretName(job.Name) {
		return nil
	}
	return jobs.ConstructStorageSecret(job.Namespace, job.Name, cfg, clusterEndpoint)
}

// scanTrees packs the code and scans the data: their digests name them in the job. A
// tree unchanged since it was last stored is known by its digest without reading it.
func (s *submission) scanTrees(dataDir string) error {
	var err error
	if s.dir != "" {
		if s.archive, err = storage.PackCode(s.dir, s.cache); err != nil {
			return invalidJob(err, "DIR")
		}
		s.p.Code = &tfv1.Code{
			Source: s.cfg.Root().Join(s.archive.Key(storage.CodePrefix)).String(),
			SHA256: s.archive.SHA256,
			Path:   tfjob.DefaultCodePath,
		}
	}
	if s.localData {
		if s.data, err = storage.ScanDataSet(dataDir, s.cache); err != nil {
			s.archive.Remove()
			return invalidJob(err, "--data")
		}
		s.p.Data = []tfv1.DataSource{{Source: s.data.Prefix(s.cfg.Root()).String(), Path: jobspec.DefaultDataPath}}
	}
	return nil
}

// storageKnown reports whether the S3 settings name an endpoint and a bucket: every
// job submitted then keeps its logs and its run record there, code or no code.
func (o *rootOptions) storageKnown() bool {
	cfg, err := o.storageConfig()
	return err == nil && cfg.Endpoint != "" && cfg.Bucket != "" && cfg.AccessKeyID != ""
}

// hasCommand reports whether every replica of the job has a command the agent can run:
// the one after --, else the manifest's.
func hasCommand(base *tfv1.TFJob, command []string) bool {
	if len(command) > 0 {
		return true
	}
	if base == nil {
		return false
	}
	for _, spec := range base.Spec.TFReplicaSpecs {
		if spec == nil {
			continue
		}
		if c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers); c == nil || len(c.Command) == 0 {
			return false
		}
	}
	return true
}

// readBase reads the job the flags apply over: the manifest of -f, or the job of the
// run of --from-run; no job for neither.
func (o *rootOptions) readBase(ctx context.Context, f *submitFlags) (baseJob, error) {
	switch {
	case f.file != "" && f.fromRun != "":
		return baseJob{}, fmt.Errorf("-f %s and --from-run %s: give one", f.file, f.fromRun)
	case f.file != "":
		job, err := readManifest(f.file, o.env.In)
		return baseJob{job: job}, err
	case f.fromRun != "":
		return o.runBase(ctx, f.fromRun, f.rightSize)
	}
	return baseJob{}, nil
}

// readManifest reads the manifest of -f: a file, or stdin for "-".
func readManifest(name string, stdin io.Reader) (*tfv1.TFJob, error) {
	data, err := readFile(name, stdin)
	if err != nil {
		return nil, invalidJob(fmt.Errorf("reading -f %s: %w", name, err), "-f")
	}
	job, err := jobspec.Decode(data)
	if err != nil {
		return nil, &invalidJobError{field: cmp.Or(leadingField(err.Error()), "-f"), err: fmt.Errorf("-f %s: %w", name, err)}
	}
	return job, nil
}

// readFile reads a file, or stdin for "-".
func readFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// baseName is the name of the manifest's job, "" without one.
func baseName(base *tfv1.TFJob) string {
	if base == nil {
		return ""
	}
	return base.Name
}

// resolveStorageSecret sets f.storageSecret from the environment when the flag is not
// given, and checks it: a Secret's name, and no --s3-cluster-endpoint beside it (the
// Secret holds the endpoint pods reach).
func (o *rootOptions) resolveStorageSecret(cmd *cobra.Command, f *submitFlags) error {
	what := "--storage-secret"
	if !cmd.Flags().Changed("storage-secret") {
		f.storageSecret, what = o.env.Getenv(jobs.EnvStorageSecret), jobs.EnvStorageSecret
	}
	if f.storageSecret == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(f.storageSecret); len(errs) > 0 {
		return fmt.Errorf("%s %q: not a Secret's name: %s", what, f.storageSecret, strings.Join(errs, "; "))
	}
	if f.clusterEndpoint != "" {
		return fmt.Errorf("--s3-cluster-endpoint %s: the job's pods reach S3 at the endpoint in the Secret %s (%s), which this does not change: leave one out",
			f.clusterEndpoint, f.storageSecret, what)
	}
	return nil
}
