package faults

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections from a loopback port to a target address. Cut closes
// every open connection and refuses new ones until Restore; TLS passes through untouched,
// so a client keeps verifying the target's certificate.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
	wg    sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 at a free port and forwards to target until Close.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every forwarded connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore accepts and forwards connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops listening, closes every connection and waits for the copiers to end.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.wg.Add(1)
		go p.forward(client)
	}
}

// track registers c unless the proxy is cut; it reports whether c may be used.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		_ = client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		_ = server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a TCP peer that closed would.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}
