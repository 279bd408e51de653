// Command imgprobe is the program of the node's test images: it prints what a
// container sees — its arguments, working directory, identity, environment and the
// entries of the directories named by $LIST — so a test can check how the node applied
// the image's configuration and layers. It is built static (CGO_ENABLED=0).
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

func main() {
	fmt.Printf("args=%s\n", strings.Join(os.Args, " "))
	cwd, _ := os.Getwd()
	fmt.Printf("cwd=%s\n", cwd)
	groups, _ := os.Getgroups()
	sort.Ints(groups)
	fmt.Printf("uid=%d gid=%d groups=%v\n", os.Getuid(), os.Getgid(), groups)
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		fmt.Printf("env %s\n", kv)
	}
	for _, dir := range strings.Fields(os.Getenv("LIST")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			fmt.Printf("ls %s: %v\n", dir, err)
			continue
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		fmt.Printf("ls %s: %s\n", dir, strings.Join(names, " "))
	}
}
