// Package nft drives the nft command of nftables: the host's and the upstream nodes'
// packet filters are written as nft scripts and applied in one transaction each.
//
// The command rather than a netlink library: kube-proxy drives nft the same way (through
// sigs.k8s.io/knftables), a script reads as what `nft list` prints back, and the
// kernel applies each script whole or not at all.
package nft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// fallbackPath is where nft is looked for when it is not on PATH: Debian's sbin,
// which a user's PATH may lack.
const fallbackPath = "/usr/sbin/nft"

// Apply runs script with `nft -f -`, as one transaction.
func Apply(ctx context.Context, script string) error {
	_, err := run(ctx, strings.NewReader(script), "-f", "-")
	return err
}

// Table is an nftables table of the ip family, and its sets of interface names by
// the set's name.
type Table struct {
	Name string
	Sets map[string]Set
}

// Set is a set of an nftables table: its comment and its elements.
type Set struct {
	Comment  string
	Elements []string
}

// ListTables lists the tables of the ip family with their sets.
func ListTables(ctx context.Context) ([]Table, error) {
	tables, err := run(ctx, nil, "-j", "list", "tables", "ip")
	if err != nil {
		return nil, err
	}
	sets, err := run(ctx, nil, "-j", "list", "sets", "ip")
	if err != nil {
		return nil, err
	}
	return decodeTables(tables, sets)
}

// listing is the JSON of `nft -j list tables` and `nft -j list sets`: objects of
// which only tables and sets are read.
type listing struct {
	Nftables []struct {
		Table *struct {
			Name string `json:"name"`
		} `json:"table"`
		Set *listedSet `json:"set"`
	} `json:"nftables"`
}

// listedSet is a set as nft lists it.
type listedSet struct {
	Table   string            `json:"table"`
	Name    string            `json:"name"`
	Comment string            `json:"comment"`
	Elem    []json.RawMessage `json:"elem"`
}

// decodeTables joins the tables of one listing to the sets of the other. Elements
// that are not plain strings (intervals, concatenations) are left out.
func decodeTables(tablesJSON, setsJSON []byte) ([]Table, error) {
	var tl, sl listing
	if err := json.Unmarshal(tablesJSON, &tl); err != nil {
		return nil, fmt.Errorf("decoding nft's list of tables: %w", err)
	}
	if err := json.Unmarshal(setsJSON, &sl); err != nil {
		return nil, fmt.Errorf("decoding nft's list of sets: %w", err)
	}
	var tables []Table
	index := map[string]int{}
	for _, o := range tl.Nftables {
		if o.Table != nil {
			index[o.Table.Name] = len(tables)
			tables = append(tables, Table{Name: o.Table.Name, Sets: map[string]Set{}})
		}
	}
	for _, o := range sl.Nftables {
		if o.Set == nil {
			continue
		}
		i, ok := index[o.Set.Table]
		if !ok {
			continue // a table added between the two listings
		}
		s := Set{Comment: o.Set.Comment}
		for _, raw := range o.Set.Elem {
			var name string
			if json.Unmarshal(raw, &name) == nil {
				s.Elements = append(s.Elements, name)
			}
		}
		tables[i].Sets[o.Set.Name] = s
	}
	return tables, nil
}

// run runs nft with args and stdin, and returns its standard output.
func run(ctx context.Context, stdin *strings.Reader, args ...string) ([]byte, error) {
	path, err := exec.LookPath("nft")
	if err != nil {
		path = fallbackPath
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running nft %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
