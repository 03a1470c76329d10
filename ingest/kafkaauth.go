package ingest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Kafka security: kafka://...?tls=true&sasl=MECHANISM. Secrets never go in
// the URL (it is logged); they come from the environment:
//
//	BQSTORE_KAFKA_USERNAME, BQSTORE_KAFKA_PASSWORD  SASL credentials
//	BQSTORE_KAFKA_CA_FILE                           PEM CA bundle for tls=true
//	                                                (default: the system roots)
//	BQSTORE_KAFKA_CERT_FILE, BQSTORE_KAFKA_KEY_FILE PEM client certificate and
//	                                                key (mutual TLS), optional
const (
	EnvKafkaUsername = "BQSTORE_KAFKA_USERNAME"
	EnvKafkaPassword = "BQSTORE_KAFKA_PASSWORD"
	EnvKafkaCAFile   = "BQSTORE_KAFKA_CA_FILE"
	EnvKafkaCertFile = "BQSTORE_KAFKA_CERT_FILE"
	EnvKafkaKeyFile  = "BQSTORE_KAFKA_KEY_FILE"
)

// saslMechanisms are the sasl= values.
var saslMechanisms = []string{"plain", "scram-sha-256", "scram-sha-512"}

// parseKafkaSecurity reads the tls and sasl parameters of a kafka:// URL.
func (s *KafkaSource) parseKafkaSecurity(raw, key, v string) error {
	switch key {
	case "tls":
		switch strings.ToLower(v) {
		case "true", "1", "yes":
			s.TLS = true
		case "false", "0", "no", "":
			s.TLS = false
		default:
			return fmt.Errorf("ingest: %q: tls=%q: want true or false", raw, v)
		}
	case "sasl":
		m := strings.ToLower(v)
		for _, ok := range saslMechanisms {
			if m == ok {
				s.SASL = m
				return nil
			}
		}
		return fmt.Errorf("ingest: %q: sasl=%q: want %s", raw, v, strings.Join(saslMechanisms, ", "))
	}
	return nil
}

// Secure turns TLS and SASL into client options, reading the secrets with
// lookupEnv (os.LookupEnv when nil). It is called once, before Run (Run
// calls it if the caller did not); a missing variable is an error naming
// it.
func (s *KafkaSource) Secure(lookupEnv func(string) (string, bool)) error {
	if s.secured {
		return nil
	}
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	get := func(k string) string {
		v, _ := lookupEnv(k)
		return v
	}
	var opts []kgo.Opt
	if s.TLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if f := get(EnvKafkaCAFile); f != "" {
			pem, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("ingest: kafka tls: %s: %w", EnvKafkaCAFile, err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("ingest: kafka tls: %s=%s holds no PEM certificate", EnvKafkaCAFile, f)
			}
		}
		cert, key := get(EnvKafkaCertFile), get(EnvKafkaKeyFile)
		if (cert == "") != (key == "") {
			return fmt.Errorf("ingest: kafka tls: set both %s and %s, or neither", EnvKafkaCertFile, EnvKafkaKeyFile)
		}
		if cert != "" {
			c, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return fmt.Errorf("ingest: kafka tls: client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.SASL != "" {
		user, pass := get(EnvKafkaUsername), get(EnvKafkaPassword)
		if user == "" || pass == "" {
			return fmt.Errorf("ingest: kafka sasl=%s needs the credentials in %s and %s", s.SASL, EnvKafkaUsername, EnvKafkaPassword)
		}
		var m sasl.Mechanism
		switch s.SASL {
		case "plain":
			m = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case "scram-sha-256":
			m = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case "scram-sha-512":
			m = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	s.Opts = append(s.Opts, opts...)
	s.secured = true
	return nil
}
