package ecosystem

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// customsReadsPolicy is an audit policy (serve's --audit-policy-file)
// that logs the lists and watches of customs: which protocol a tool's
// informers speak.
const customsReadsPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [list, watch]
  resources:
  - group: test
    resources: [customs]
- level: None
`

// reads counts a client's reads of customs.
type reads struct {
	// lists and watches are plain lists and watches, watchLists the
	// watches with sendInitialEvents=true (the watch-list protocol).
	lists, watches, watchLists int
}

// customsReads returns the reads of customs in the audit log at path, from
// offset on, by clients whose user agent starts with agent, and logs them.
// A watch counts once (at its ResponseStarted stage).
func customsReads(t *testing.T, path string, offset int64, agent string) reads {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r reads
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(string(data[offset:])), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Verb, RequestURI, UserAgent, Stage string
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit log line: %v: %s", err, line)
		}
		if !strings.HasPrefix(ev.UserAgent, agent) || ev.Verb == "watch" && ev.Stage != "ResponseStarted" {
			continue
		}
		seen = append(seen, ev.Verb+" "+ev.RequestURI+" ("+ev.UserAgent+")")
		switch {
		case ev.Verb == "list":
			r.lists++
		case strings.Contains(ev.RequestURI, "sendInitialEvents=true"):
			r.watchLists++
		default:
			r.watches++
		}
	}
	t.Logf("%s's reads of customs (audit log): %d lists, %d watches, %d watch lists:\n  %s",
		agent, r.lists, r.watches, r.watchLists, strings.Join(seen, "\n  "))
	return r
}
