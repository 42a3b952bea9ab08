// Package ecosystem is a placeholder; see the real doc below.
package ecosystem
