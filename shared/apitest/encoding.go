package apitest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Decompressed returns body as it was before the Content-Encoding encoding, the one of the
// encodings the service compresses with (docs/api.md §10.1) or none: what a client reads once its
// HTTP library has undone the compression.
func Decompressed(encoding string, body []byte) ([]byte, error) {
	switch encoding {
	case "":
		return body, nil
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case "zstd":
		r, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", encoding)
}
