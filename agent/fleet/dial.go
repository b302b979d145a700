package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Dial makes a client of the etcd at endpoints (host:port), over TLS when
// tc is not nil. With TLS it first shakes hands with the endpoints itself,
// so that a wrong CA or server name is an error that says so at once
// rather than a request that times out later.
func Dial(ctx context.Context, endpoints []string, tc *tls.Config) (*clientv3.Client, error) {
	if tc != nil {
		if err := checkTLS(ctx, endpoints, tc); err != nil {
			return nil, err
		}
	} else if err := checkPlain(ctx, endpoints); err != nil {
		return nil, err
	}
	// gRPC's default reconnect backoff grows to 2 minutes: a member would
	// not reach an etcd back after an outage before its lease ran out
	// (the renewals reset it too)
	reconnect := grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2,
		MaxDelay: 500 * time.Millisecond}, MinConnectTimeout: 2 * time.Second})
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, TLS: tc, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{reconnect}})
	if err != nil {
		return nil, fmt.Errorf("fleet: etcd %v: %w", endpoints, err)
	}
	return cli, nil
}

// checkTLS succeeds when a TLS handshake with one of the endpoints does;
// else it returns the first endpoint's error, with what to check.
func checkTLS(ctx context.Context, endpoints []string, tc *tls.Config) error {
	var first error
	for _, ep := range endpoints {
		err := handshake(ctx, ep, tc)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func handshake(ctx context.Context, ep string, tc *tls.Config) error {
	c := tc.Clone()
	if c.ServerName == "" {
		host, _, err := net.SplitHostPort(ep)
		if err != nil {
			return fmt.Errorf("fleet: etcd endpoint %q: %w", ep, err)
		}
		c.ServerName = host
	}
	c.NextProtos = []string{"h2"}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: c}).DialContext(hctx, "tcp", ep)
	if err == nil {
		return refused(ep, conn)
	}
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("fleet: etcd %s over TLS: %w (is fleet.tls.ca the CA that signed etcd's certificate?)", ep, err)
	case errors.As(err, &he):
		return fmt.Errorf("fleet: etcd %s over TLS: %w (set fleet.tls.server-name to a name the certificate is for)", ep, err)
	}
	if plainH2(ctx, ep) {
		return fmt.Errorf("fleet: etcd %s does not speak TLS (it answers in plain text: %w): drop fleet.tls, or give the endpoint of etcd's TLS client URL", ep, err)
	}
	return fmt.Errorf("fleet: etcd %s over TLS: %w", ep, err)
}

// checkPlain refuses, for a client in plain text, an endpoint that speaks
// TLS (a TLS handshake with it, its certificate not checked, succeeds):
// every request would go unanswered until its deadline, said as "did not
// answer". An endpoint that cannot be reached is not judged here.
func checkPlain(ctx context.Context, endpoints []string) error {
	for _, ep := range endpoints {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}}).DialContext(hctx, "tcp", ep)
		cancel()
		var ve *tls.CertificateVerificationError
		var oe *net.OpError
		speaks := err == nil || errors.As(err, &ve) || errors.As(err, &oe) && oe.Op == "remote error"
		if conn != nil {
			conn.Close()
		}
		if speaks {
			return fmt.Errorf("fleet: etcd %s speaks TLS: set fleet.tls (its ca: the CA that signed etcd's certificate; cert and key if etcd wants client certificates)", ep)
		}
	}
	return nil
}

// plainH2 says whether ep answers HTTP/2 in plain text (etcd's gRPC without
// TLS): its first frame to the client preface is SETTINGS.
func plainH2(ctx context.Context, ep string) bool {
	var d net.Dialer
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(hctx, "tcp", ep)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	// the client preface, then an empty SETTINGS frame
	if _, err := conn.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
		return false
	}
	h := make([]byte, 9)
	if _, err := io.ReadFull(conn, h); err != nil {
		return false
	}
	return h[3] == 4 // a frame of type SETTINGS
}

// refused reads from a connection whose handshake succeeded, for up to a
// second: with TLS 1.3 a server that refuses the client's certificate (or
// its absence) says so only after the client's handshake is over.
func refused(ep string, conn net.Conn) error {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err := conn.Read(make([]byte, 1))
	var oe *net.OpError
	if err != nil && errors.As(err, &oe) && oe.Op == "remote error" {
		return fmt.Errorf("fleet: etcd %s over TLS refused this client: %w (does etcd want a client certificate, fleet.tls.cert and fleet.tls.key, signed by its CA?)", ep, err)
	}
	return nil
}
