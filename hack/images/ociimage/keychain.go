package ociimage

import "github.com/google/go-containerregistry/pkg/authn"

// keychain reads registry credentials from the Docker config, as docker login and
// crane auth login write it.
var keychain = authn.DefaultKeychain
