package notebook

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// Objects returns the objects tfk8s notebook start creates for a notebook
// started with --image, --cpu and --memory ("" for a flag's default), the S3
// settings s3 and JupyterLab's token, in the order it creates them. Tests compare
// what another way of starting one (the dashboard's) created with them.
func Objects(namespace, name, image, cpu, memory string, s3 storage.Config, token string) ([]client.Object, error) {
	s, err := Defaults(image, cpu, memory).Spec(namespace, name)
	if err != nil {
		return nil, err
	}
	s.S3, s.Token = s3, token
	account, _, _ := constructNotebookAccount(s)
	objs := []client.Object{account}
	for _, step := range steps(s, account) {
		objs = append(objs, step.obj)
	}
	return objs, nil
}

// Defaults are tfk8s notebook start's flags with the given --image, --cpu
// and --memory, and the command's defaults for the rest (an empty image is the
// default one).
func Defaults(image, cpu, memory string) Settings {
	f := Settings{Image: image, CPU: cpu, Memory: memory, Size: DefaultSize}
	if f.Image == "" {
		f.Image = DefaultImage
	}
	return f
}
