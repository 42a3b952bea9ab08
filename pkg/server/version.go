package server

import "strings"

// semverBuildMetadata turns a Go module version into semver build metadata
// identifiers (dot-separated [0-9A-Za-z-]), for /version's gitVersion:
// "v0.4.0" stays, "(devel)" becomes "devel", "v2.0.0+incompatible"
// becomes "v2.0.0-incompatible", "" becomes "unknown".
func semverBuildMetadata(v string) string {
	v = strings.Trim(v, "()")
	var sb strings.Builder
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteRune('-')
		}
	}
	ids := strings.Split(sb.String(), ".")
	kept := ids[:0]
	for _, id := range ids {
		if id != "" {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 {
		return "unknown"
	}
	return strings.Join(kept, ".")
}
