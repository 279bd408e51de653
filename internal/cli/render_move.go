package cli

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// moveTargetTFK8s is the one API render --to converts to.
const moveTargetTFK8s = "tfk8s"

// moveFlags are the flags render --to reads: the rest are submit's, which a move does
// not take (add them with tfk8s submit -f on the manifest it prints).
var moveFlags = map[string]bool{"to": true, "filename": true, "output": true}

// renderMoved prints the tfk8s.io TFJob that the Kubeflow TFJob of -f, or the live
// kubeflow.org job named by args, moves to, through internal/kubeflow's conversion,
// and on stderr the same job as submit's flags.
func (o *rootOptions) renderMoved(cmd *cobra.Command, to string, f *submitFlags, args []string) error {
	if to != moveTargetTFK8s {
		return invalidJob(fmt.Errorf("--to %q: want %s", to, moveTargetTFK8s), "--to")
	}
	if err := checkOutput(f.output, outputTable, outputYAML, outputJSON); err != nil {
		return err
	}
	var other error
	cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && !moveFlags[fl.Name] && other == nil {
			other = invalidJob(fmt.Errorf("--%s: render --to converts a job as it is; give --%s to tfk8s submit -f with the manifest it prints", fl.Name, fl.Name), "--"+fl.Name)
		}
	})
	if other != nil {
		return other
	}
	model, err := o.kubeflowModel(cmd.Context(), f.file, args)
	if err != nil {
		return err
	}
	job := kubeflow.ToTFK8s(model)
	if err := printObject(o.env.Out, job, cmp.Or(f.output, outputYAML)); err != nil {
		return err
	}
	printAsFlags(o.env.ErrOut, job)
	return nil
}

// kubeflowModel reads the Kubeflow TFJob to move, from -f or from the cluster (JOB or
// kubeflow.org/JOB), as the model.
func (o *rootOptions) kubeflowModel(ctx context.Context, file string, args []string) (*tfv1.TFJob, error) {
	switch {
	case file != "" && len(args) > 0:
		return nil, invalidJob(fmt.Errorf("-f %s and job %s: give one", file, args[0]), "-f")
	case len(args) > 1:
		return nil, invalidJob(fmt.Errorf("render --to takes one job, got %d", len(args)), "JOB")
	case file != "":
		data, err := readFile(file, o.env.In)
		if err != nil {
			return nil, invalidJob(fmt.Errorf("reading -f %s: %w", file, err), "-f")
		}
		kf, err := jobspec.DecodeKubeflow(data)
		if err != nil {
			return nil, invalidJob(fmt.Errorf("-f %s: %w", file, err), "-f")
		}
		return kubeflow.ToModel(kf), nil
	case len(args) == 0:
		return nil, invalidJob(fmt.Errorf("render --to: give the Kubeflow TFJob, as -f FILE or its name"), "JOB")
	}
	cs, err := o.clients()
	if err != nil {
		return nil, err
	}
	_, name := jobs.SplitRef(args[0])
	return jobs.Get(ctx, cs.Client, cs.Namespace, kubeflow.GVK.Group+"/"+name)
}
