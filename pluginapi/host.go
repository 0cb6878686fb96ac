package pluginapi

import (
	"github.com/computerfs/computerfs/pluginapi/pb"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Client is the host's side of a running plugin: its Backend client and
// the broker through which the host serves HostFS back to it.
type Client struct {
	Backend pb.BackendClient
	broker  *plugin.GRPCBroker
}

// ServeHostFS serves the services register adds to the plugin, through
// the broker, and returns the broker ID to pass in Configure. The broker
// owns the serving goroutine: it ends when the plugin's client is killed.
func (c *Client) ServeHostFS(register func(*grpc.Server)) uint32 {
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		register(s)
		return s
	})
	return id
}

// HostPlugins is the VersionedPlugins a host offers: every protocol
// version it speaks.
func HostPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &GRPCPlugin{}},
	}
}
