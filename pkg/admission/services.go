package admission

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// NewServiceResolver returns the resolver of webhooks' clientConfig.service
// for a server without Services: mapping takes "namespace/name" to
// "host:port" or to "host" (the service reference's port is kept). A
// service it does not name resolves as upstream's default resolver does,
// to https://<name>.<namespace>.svc:<port>. Whatever the address, the
// webhook is called over HTTPS with TLS server name <name>.<namespace>.svc
// (k8s.io/apiserver's client: the webhook's certificate must be valid for
// that name, as in kube) and verified with the webhook's caBundle.
//
// Errors, one per bad entry, joined: a key that is not "namespace/name"
// with DNS label parts (a namespace and a service name), a value that is
// not a host with an optional port in 1..65535.
func NewServiceResolver(mapping map[string]string) (webhookutil.ServiceResolver, error) {
	r := serviceResolver{to: map[string]target{}, fallback: webhookutil.NewDefaultServiceResolver()}
	keys := make([]string, 0, len(mapping))
	for k := range mapping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		t, err := parseServiceEntry(k, mapping[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", k, mapping[k], err))
			continue
		}
		r.to[k] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// target is where a mapped service goes: host, and port unless 0 (the
// service reference's).
type target struct {
	host string
	port int
}

func parseServiceEntry(key, value string) (target, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return target{}, errors.New(`the service must be "namespace/name"`)
	}
	for _, part := range []struct{ what, v string }{{"namespace", ns}, {"service name", name}} {
		if msgs := validation.IsDNS1123Label(part.v); len(msgs) != 0 {
			return target{}, fmt.Errorf("%s %q: %s", part.what, part.v, strings.Join(msgs, "; "))
		}
	}
	host, port := value, 0
	if h, p, err := net.SplitHostPort(value); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return target{}, fmt.Errorf("port %q must be a number in 1..65535", p)
		}
		host, port = h, n
	} else if strings.Contains(value, ":") && net.ParseIP(value) == nil {
		// not a bare IPv6 address either
		return target{}, fmt.Errorf(`the address must be "host:port" or "host": %w`, err)
	}
	if host == "" {
		return target{}, errors.New(`the address must be "host:port" or "host"`)
	}
	if net.ParseIP(host) == nil {
		if msgs := validation.IsDNS1123Subdomain(host); len(msgs) != 0 {
			return target{}, fmt.Errorf("host %q: %s", host, strings.Join(msgs, "; "))
		}
	}
	return target{host: host, port: port}, nil
}

// serviceResolver is NewServiceResolver's resolver.
type serviceResolver struct {
	to       map[string]target
	fallback webhookutil.ServiceResolver
}

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	t, ok := r.to[namespace+"/"+name]
	if !ok {
		return r.fallback.ResolveEndpoint(namespace, name, port)
	}
	p := t.port
	if p == 0 {
		if port == 0 {
			return nil, fmt.Errorf("service %s/%s: no port", namespace, name)
		}
		p = int(port)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(t.host, strconv.Itoa(p))}, nil
}
