package server

// Config is a validated Options with the data directory prepared (see
// Options.Config). Call Complete to use it.
type Config struct {
	// Options are the options the config was made from, with DataDir made
	// absolute and, for SecurePort 0, Listener bound.
	Options Options
	// CAData is the PEM CA certificate that signed the serving certificate.
	CAData []byte
	// AdminToken is the bearer token of the admin user (group
	// system:masters).
	AdminToken string
	// KubeconfigPath is <data-dir>/admin.kubeconfig.
	KubeconfigPath string
	// URL is the address clients use, for example https://127.0.0.1:6443.
	URL string
}

// CompletedConfig is a Config ready for New. Only Complete makes one.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	Config
}

// Complete fills in what the config leaves to defaults; nothing today, but
// New only takes a completed config, as k8s.io/apiserver's configs do.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{Config: *c}}
}
