package localcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// explicitLoadAnnotation, "explicit" on an index.json descriptor, keeps a layout of a
// directory of layouts out of what up pushes: make tensorflow-gpu-image writes it on
// the CUDA image, whose 4 GB a cluster gets only when a user names the layout
// itself (tfk8s local load _out/images/tensorflow-gpu, or up --images with that path).
const explicitLoadAnnotation = "io.tfk8s.local.load"

// loadsOnRequest reports whether the layout in dir asks to be loaded only when named.
func loadsOnRequest(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return false
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if json.Unmarshal(data, &index) != nil {
		return false
	}
	for _, m := range index.Manifests {
		if m.Annotations[explicitLoadAnnotation] == "explicit" {
			return true
		}
	}
	return false
}
