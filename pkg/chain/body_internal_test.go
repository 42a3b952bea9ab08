package chain

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"
)

// TestRequestBodyChunks reads bodies through requestBody's pump, which
// reuses two buffers: every byte arrives once and in order, whatever the
// body's length (known or not, below and above a chunk), how the real body
// splits its reads, and how little the handler reads at a time.
func TestRequestBodyChunks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		known  bool
		reader func(io.Reader) io.Reader
		readAt int // bytes per Read of the handler
	}{
		{"small known", 600, true, func(r io.Reader) io.Reader { return r }, 4096},
		{"small unknown", 600, false, func(r io.Reader) io.Reader { return r }, 4096},
		{"small, one byte at a time", 600, true, iotest.OneByteReader, 7},
		{"exactly one chunk", maxBodyChunk, true, func(r io.Reader) io.Reader { return r }, 1000},
		{"several chunks known", 5*maxBodyChunk + 123, true, iotest.HalfReader, 3000},
		{"several chunks unknown", 5*maxBodyChunk + 123, false, iotest.DataErrReader, 50000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(rand.IntN(256))
			}
			length := int64(-1)
			if tc.known {
				length = int64(tc.size)
			}
			b := &requestBody{body: io.NopCloser(tc.reader(bytes.NewReader(data))), length: length, start: time.Now(),
				deadline: time.Now().Add(time.Minute), chunks: make(chan bodyChunk), stop: make(chan struct{})}
			defer b.stopPump()
			var got []byte
			p := make([]byte, tc.readAt)
			for {
				n, err := b.Read(p)
				got = append(got, p[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, want %d; equal prefix %d", len(got), len(data), commonPrefix(got, data))
			}
		})
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// BenchmarkRequestBody reads a 600-byte body (the benchmark sample's size)
// through requestBody, as every create's body is read: go test ./pkg/server
// -run XXX -bench RequestBody -benchmem.
func BenchmarkRequestBody(b *testing.B) {
	data := bytes.Repeat([]byte("x"), 600)
	for b.Loop() {
		body := &requestBody{body: io.NopCloser(bytes.NewReader(data)), length: int64(len(data)), start: time.Now(),
			deadline: time.Now().Add(time.Minute), chunks: make(chan bodyChunk), stop: make(chan struct{})}
		if _, err := io.ReadAll(body); err != nil {
			b.Fatal(err)
		}
		body.stopPump()
	}
}
