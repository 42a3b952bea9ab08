package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	clientfeatures "k8s.io/client-go/features"

	benchv1 "github.com/customapi/customapi/pkg/apis/bench/v1"
)

// wireEncoding is how the HTTP targets encode request bodies and which
// encoding they accept in answers (--content-type).
type wireEncoding struct {
	// name is json, cbor or protobuf.
	name string
	// mediaType is the Content-Type of bodies and the only type in Accept.
	mediaType string
	// answers are the media types (without parameters) a 2xx answer may
	// carry: the type itself and, for watches, its stream form.
	answers []string
}

var wireEncodings = []wireEncoding{
	{"json", runtime.ContentTypeJSON, []string{runtime.ContentTypeJSON}},
	{"cbor", runtime.ContentTypeCBOR, []string{runtime.ContentTypeCBOR, runtime.ContentTypeCBORSequence}},
	{"protobuf", runtime.ContentTypeProtobuf, []string{runtime.ContentTypeProtobuf}},
}

// parseWireEncoding accepts json, cbor, protobuf or their media types; ""
// is json.
func parseWireEncoding(s string) (wireEncoding, error) {
	if s == "" {
		return wireEncodings[0], nil
	}
	for _, e := range wireEncodings {
		if s == e.name || s == e.mediaType {
			return e, nil
		}
	}
	return wireEncoding{}, fmt.Errorf("unknown content type %q (json, cbor or protobuf)", s)
}

// prepare checks that this process can speak the encoding: protobuf needs
// the generated marshallers of Sample, CBOR needs client-go's
// ClientsAllowCBOR feature, which prepare switches on (without it client-go
// silently rewrites a CBOR Content-Type and Accept to JSON, so the run would
// measure JSON under the CBOR label).
func (e wireEncoding) prepare() error {
	switch e.name {
	case "protobuf":
		var s any = &benchv1.Sample{}
		_, sized := s.(runtime.ProtobufMarshaller)
		_, plain := s.(interface{ Marshal() ([]byte, error) })
		_, un := s.(interface{ Unmarshal([]byte) error })
		if !(sized || plain) || !un {
			return errors.New("--content-type protobuf: pkg/apis/bench/v1 Sample has no generated protobuf marshallers (Marshal/Unmarshal) in this build")
		}
	case "cbor":
		return allowClientCBOR()
	}
	return nil
}

// allowClientCBOR switches on client-go's ClientsAllowCBOR gate for this
// process. client-go's default gates read KUBE_FEATURE_<name> environment
// variables and also have a Set method; a program that replaced client-go's
// gates (features.ReplaceFeatureGates) must enable the gate itself, and the
// error says so.
func allowClientCBOR() error {
	gates := clientfeatures.FeatureGates()
	if gates.Enabled(clientfeatures.ClientsAllowCBOR) {
		return nil
	}
	if s, ok := gates.(interface {
		Set(clientfeatures.Feature, bool) error
	}); ok {
		if err := s.Set(clientfeatures.ClientsAllowCBOR, true); err != nil {
			return fmt.Errorf("enabling client-go's ClientsAllowCBOR: %w", err)
		}
	}
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.ClientsAllowCBOR) {
		return errors.New("--content-type cbor: client-go's ClientsAllowCBOR feature is off and cannot be switched on here; set KUBE_FEATURE_ClientsAllowCBOR=true")
	}
	return nil
}

// codecsFor returns the codecs of a scheme in which gv's kind (and
// kind+"List") are the benchmark's Go types, with CBOR besides the default
// JSON, YAML and protobuf serializers.
func codecsFor(gv schema.GroupVersion, kind string) serializer.CodecFactory {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind(kind), &benchv1.Sample{})
	scheme.AddKnownTypeWithName(gv.WithKind(kind+"List"), &benchv1.SampleList{})
	metav1.AddToGroupVersion(scheme, gv)
	return serializer.NewCodecFactory(scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
}

// wireCheck guards the requests under prefix (the resource's API path) so
// a run never measures another encoding than asked: a body sent in another
// type (a client-side fallback), a 2xx answer in another type, or a 406/415
// (the server does not serve the encoding) becomes an error naming what was
// asked and what came back.
type wireCheck struct {
	next   http.RoundTripper
	prefix string
	enc    wireEncoding
}

func (c *wireCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, c.prefix) {
		return c.next.RoundTrip(req)
	}
	if req.Body != nil && req.Body != http.NoBody {
		if got := mediaTypeOf(req.Header.Get("Content-Type")); got != c.enc.mediaType {
			return nil, fmt.Errorf("%s %s: the client sent a %s body, not %s as asked", req.Method, req.URL.Path, got, c.enc.mediaType)
		}
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotAcceptable || resp.StatusCode == http.StatusUnsupportedMediaType:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		msg := strings.TrimSpace(string(body))
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return nil, fmt.Errorf("%s %s: the server answered %d to %s (--content-type %s): it does not serve this encoding for the resource (%s)",
			req.Method, req.URL.Path, resp.StatusCode, c.enc.mediaType, c.enc.name, strings.Join(strings.Fields(msg), " "))
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		got := mediaTypeOf(resp.Header.Get("Content-Type"))
		for _, ok := range c.enc.answers {
			if got == ok {
				return resp, nil
			}
		}
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: asked for %s, the server answered %d in %q", req.Method, req.URL.Path, c.enc.mediaType, resp.StatusCode, got)
	}
	return resp, nil
}

func mediaTypeOf(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType
	}
	return t
}
