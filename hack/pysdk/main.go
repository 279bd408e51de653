// Command pysdk writes the Python SDK's Client.submit from tfk8s submit's flags: a
// keyword argument for each, typed by its jobspec.Field kind and documented by the
// flag's help, so that the SDK takes every parameter the CLI takes, spelled alike, and
// help(tfk8s.Client.submit) says what the CLI's help says. make generate runs it, and
// make verify fails when a file it writes is out of date. It writes the package's
// version too, the CLI's, so that a wheel and the binary it carries agree.
//
// Usage: pysdk <package dir> (writes _submit.py and _version.py there)
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/version"
)

// skipped are submit's flags that the SDK has its own way for: its methods wait and
// follow, and it reads the job as JSON; dry-run is submit's own keyword.
var skipped = []string{"dry-run", "follow", "wait", "output", "help"}

// manifestFlag is -f, which the SDK takes as manifest=, a dict or YAML text.
const manifestFlag = "filename"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pysdk <package dir>")
		os.Exit(2)
	}
	out, err := generate()
	if err == nil {
		err = os.WriteFile(filepath.Join(os.Args[1], "_submit.py"), out, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(os.Args[1], "_version.py"), versionFile(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pysdk: %v\n", err)
		os.Exit(1)
	}
}

// keyword is one of submit's keyword arguments.
type keyword struct {
	// name is the Python name, flag the flag's: --artifacts-interval, artifacts_interval.
	name, flag string
	// kind is how the SDK turns the value into the flag's: string, int, bool,
	// duration or list.
	kind string
	// typ is the Python annotation, help the docstring's text.
	typ, help string
}

// keywords are submit's flags as keywords: the job's parameters in the order of
// jobspec.Fields, then submit's own flags.
func keywords() ([]keyword, error) {
	submit, err := submitCommand()
	if err != nil {
		return nil, err
	}
	fs := submit.Flags()
	var out []keyword
	seen := map[string]bool{}
	for _, f := range jobspec.Fields() {
		if !f.IsFlag() {
			continue
		}
		flag := fs.Lookup(f.Flag)
		if flag == nil {
			return nil, fmt.Errorf("tfk8s submit has no flag --%s of jobspec.Fields", f.Flag)
		}
		out = append(out, fieldKeyword(f, flag))
		seen[f.Flag] = true
	}
	var errs []string
	fs.VisitAll(func(flag *pflag.Flag) {
		if seen[flag.Name] || flag.Name == manifestFlag || slices.Contains(skipped, flag.Name) {
			return
		}
		switch flag.Value.Type() {
		case "string":
			out = append(out, keyword{name: pythonName(flag.Name), flag: flag.Name, kind: "string", typ: "str | None", help: flag.Usage})
		case "bool":
			out = append(out, keyword{name: pythonName(flag.Name), flag: flag.Name, kind: "bool", typ: "bool | None", help: flag.Usage})
		default:
			errs = append(errs, fmt.Sprintf("--%s is a %s: teach pysdk its Python type", flag.Name, flag.Value.Type()))
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// submitCommand is tfk8s submit, whose flags the SDK's keywords are.
func submitCommand() (*cobra.Command, error) {
	root := cli.NewRootCommand(cli.Env{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), Getenv: func(string) string { return "" }})
	submit, _, err := root.Find([]string{"submit"})
	if err != nil {
		return nil, err
	}
	return submit, nil
}

// fieldKeyword is the keyword of a job's parameter.
func fieldKeyword(f jobspec.Field, flag *pflag.Flag) keyword {
	k := keyword{name: pythonName(f.Flag), flag: f.Flag, help: flag.Usage}
	switch f.Kind {
	case jobspec.KindInt:
		k.kind, k.typ = "int", "int | None"
	case jobspec.KindBool:
		k.kind, k.typ = "bool", "bool | None"
	case jobspec.KindDuration:
		k.kind, k.typ = "duration", "str | float | timedelta | None"
		k.help += "; a duration such as \"90s\" or \"2h\", a number of seconds, or a timedelta"
	case jobspec.KindList:
		k.kind, k.typ = "list", "str | Sequence[str] | None"
	case jobspec.KindChoice:
		k.kind = "string"
		quoted := make([]string, len(f.Form.Choices))
		for i, c := range f.Form.Choices {
			quoted[i] = fmt.Sprintf("%q", c)
		}
		k.typ = "Literal[" + strings.Join(quoted, ", ") + "] | None"
	default:
		k.kind, k.typ = "string", "str | None"
	}
	if f.Default != "" {
		k.help += " (default " + f.Default + ")"
	}
	return k
}

// pythonName is a flag's name as a keyword: - becomes _.
func pythonName(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

func generate() ([]byte, error) {
	kws, err := keywords()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("# Each keyword of submit: (flag, kind); kind is string, int, bool, duration or list.\n")
	b.WriteString("SUBMIT_FLAGS: dict[str, tuple[str, str]] = {\n")
	for _, k := range kws {
		fmt.Fprintf(&b, "    %q: (\"--%s\", %q),\n", k.name, k.flag, k.kind)
	}
	b.WriteString("}\n\n\nclass SubmitMixin:\n")
	b.WriteString("    \"\"\"Client.submit, generated from tfk8s submit's flags.\"\"\"\n\n")
	b.WriteString("    def _submit(self, *args: Any) -> Job:\n        raise NotImplementedError  # Client's\n\n")
	b.WriteString("    def submit(\n        self,\n        code_dir: str | os.PathLike[str] | None = None,\n        *,\n")
	for _, k := range kws {
		fmt.Fprintf(&b, "        %s: %s = None,\n", k.name, k.typ)
	}
	b.WriteString("        command: Sequence[str] | None = None,\n        manifest: Mapping[str, Any] | str | None = None,\n" +
		"        dry_run: bool = False,\n    ) -> Job:\n")
	b.WriteString(docIntro)
	b.WriteString("        Args:\n")
	arg := func(name, help string) {
		b.WriteString(wrap(name+": "+help, "            ", "                "))
	}
	arg("code_dir", "DIR: the code directory, packed (honouring .tfk8signore) and uploaded to S3 unless"+
		" S3 has it already; every replica gets it unpacked in /workspace before its command starts")
	for _, k := range kws {
		arg(k.name, k.help+" (--"+k.flag+")")
	}
	arg("command", "the command of every replica, as a list of words: tfk8s submit's arguments after --")
	arg("manifest", "a TFJob manifest that the other arguments apply over (-f): a dict, or YAML or JSON"+
		" text; tfk8s.io/v1alpha1, or Kubeflow's kubeflow.org/v1, converted")
	arg("dry_run", "return the job that would be submitted, and upload and create nothing")
	b.WriteString(docOutro)
	b.WriteString("        flags = {k: v for k, v in locals().items() if k in SUBMIT_FLAGS}\n")
	b.WriteString("        return self._submit(code_dir, flags, command, manifest, dry_run)\n")
	return b.Bytes(), nil
}

// wrap wraps text at 88 columns, its first line indented by first, the others by rest.
func wrap(text, first, rest string) string {
	text = strings.NewReplacer(`\`, `\\`, `"""`, `\"\"\"`).Replace(text)
	var b strings.Builder
	line := first
	for _, word := range strings.Fields(text) {
		if len(line)+1+len(word) > 88 && strings.TrimSpace(line) != "" {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = rest
		}
		if strings.TrimSpace(line) != "" {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

const header = `# Code generated by hack/pysdk from tfk8s submit's flags. DO NOT EDIT.
"""Client.submit: a keyword argument for every flag of tfk8s submit."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._types import Job

`

const docIntro = `        """Ship code and data to S3 and submit a TFJob, as tfk8s submit does.

        Every keyword is a flag of tfk8s submit, its - spelled _; one left out (None)
        leaves the manifest's value, or without a manifest the default. The job is
        checked whole before S3 or the cluster is touched, so a refused argument
        creates nothing.

`

const docOutro = `
        Returns:
            The job as created, or with dry_run as it would be.

        Raises:
            InvalidJob: an argument, the manifest or code_dir is refused; its field
                names the flag (e.g. "--workers").
            JobExists: a job of that name exists.
            NotSubmitted: from_run without yes: run.json could not be checked
                against the job in the cluster, so nothing was submitted; its job
                attribute is the job that would have been.
            StorageNotConfigured: the job ships files or keeps artifacts, and no S3
                endpoint or bucket is set.
            AccessDenied: the cluster or S3 refused the credentials.
            ClusterUnavailable: no kubeconfig, or the cluster does not answer.
        """
`

// versionFile is _version.py: the CLI's version as a Python package's (v0.1.0: 0.1.0).
func versionFile() []byte {
	return fmt.Appendf(nil, "# Code generated by hack/pysdk from internal/version. DO NOT EDIT.\n__version__ = %q\n",
		strings.TrimPrefix(version.Version, "v"))
}
