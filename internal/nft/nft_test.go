package nft

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The listings below are what nft 1.0.6 (Debian bookworm) prints.
const (
	tablesJSON = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}},
{"table": {"family": "ip", "name": "tfk8s-0123abcd", "handle": 1}}, {"table": {"family": "ip", "name": "other", "handle": 2}}]}`
	setsJSON = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}},
{"set": {"family": "ip", "name": "uplinks", "table": "tfk8s-0123abcd", "type": "ifname", "handle": 3, "comment": "rules 5f3a", "elem": ["xhB", "eth0"]}},
{"set": {"family": "ip", "name": "empty", "table": "other", "type": "ifname", "handle": 1}},
{"set": {"family": "ip", "name": "nets", "table": "other", "type": "ipv4_addr", "handle": 2, "flags": ["interval"], "elem": [{"prefix": {"addr": "10.0.0.0", "len": 8}}]}},
{"set": {"family": "ip", "name": "late", "table": "added-since", "type": "ifname", "handle": 1}}]}`
)

func TestDecodeTables(t *testing.T) {
	tests := []struct {
		name         string
		tables, sets string
		want         []Table
	}{{
		name:   "tables with their sets; interval elements and sets of unlisted tables left out",
		tables: tablesJSON, sets: setsJSON,
		want: []Table{
			{Name: "tfk8s-0123abcd", Sets: map[string]Set{"uplinks": {Comment: "rules 5f3a", Elements: []string{"xhB", "eth0"}}}},
			{Name: "other", Sets: map[string]Set{"empty": {}, "nets": {}}},
		},
	}, {
		name:   "no table",
		tables: `{"nftables": [{"metainfo": {"version": "1.0.6"}}]}`, sets: `{"nftables": [{"metainfo": {"version": "1.0.6"}}]}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTables([]byte(tc.tables), []byte(tc.sets))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tables (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeTablesRefusesWhatIsNotJSON(t *testing.T) {
	if _, err := decodeTables([]byte("table ip x {\n}"), []byte("{}")); err == nil {
		t.Error("decodeTables of nft's text output: no error")
	}
}
