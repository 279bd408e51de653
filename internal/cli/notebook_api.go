package cli

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// NotebookObjects returns the objects tfk8s notebook start creates for a notebook
// started with --image, --cpu and --memory ("" for a flag's default), the S3
// settings s3 and JupyterLab's token, in the order it creates them. Tests compare
// what another way of starting one (the dashboard's) created with them.
func NotebookObjects(namespace, name, image, cpu, memory string, s3 storage.Config, token string) ([]client.Object, error) {
	s, err := defaultNotebookFlags(image, cpu, memory).spec(namespace, name)
	if err != nil {
		return nil, err
	}
	s.s3, s.token = s3, token
	var objs []client.Object
	for _, step := range notebookSteps(s) {
		objs = append(objs, step.obj)
	}
	return objs, nil
}

// defaultNotebookFlags are tfk8s notebook start's flags with the given --image, --cpu
// and --memory, and the command's defaults for the rest (an empty image is the
// default one).
func defaultNotebookFlags(image, cpu, memory string) notebookStartFlags {
	flags := newNotebookStartCommand(&rootOptions{}).Flags()
	f := notebookStartFlags{image: image, cpu: cpu, memory: memory, size: flags.Lookup("size").DefValue}
	if f.image == "" {
		f.image = flags.Lookup("image").DefValue
	}
	return f
}
