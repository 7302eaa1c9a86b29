package controlplane

import (
	"errors"
	"fmt"
)

// RestartAPIServer stops kube-apiserver and starts it again on the same port, with the
// same certificates and the same etcd, so Config and Kubeconfig stay valid. Clients see
// their connections drop and the server refuse connections until it is back. It returns
// once the new server answers its health check.
func (cp *ControlPlane) RestartAPIServer() error {
	if cp.env == nil || cp.env.ControlPlane.APIServer == nil {
		return errors.New("restart kube-apiserver: the control plane is not running")
	}
	api := cp.env.ControlPlane.APIServer
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver again: %w", err)
	}
	return nil
}

// EtcdURL is the client URL of the control plane's etcd (plain HTTP on loopback).
func (cp *ControlPlane) EtcdURL() string {
	if cp.env == nil || cp.env.ControlPlane.Etcd == nil || cp.env.ControlPlane.Etcd.URL == nil {
		return ""
	}
	return cp.env.ControlPlane.Etcd.URL.String()
}
