"""The local katharanp stand-in (emulators/kathara/netplugin.py): names and replies."""

from __future__ import annotations

from emulators.kathara import netplugin


def test_names_fit_linux_and_derive_from_docker_ids():
    net, ep = "ab" * 32, "cd" * 32
    assert netplugin.bridge_name(net) == "kt" + "ab" * 6
    outer, inner = netplugin.veth_names(ep)
    assert (outer, inner) == ("kvcdcdcdcdcdc", "kccdcdcdcdcdc")
    assert all(len(n) <= 15 for n in (netplugin.bridge_name(net), outer, inner))


def test_join_hands_over_the_container_side_without_a_gateway_service():
    reply = netplugin.join({"EndpointID": "ef" * 32, "NetworkID": "ab" * 32})
    assert reply["InterfaceName"] == {"SrcName": "kcefefefefefe", "DstPrefix": "eth"}
    assert reply["DisableGatewayService"] is True


def test_activation_and_capabilities():
    assert netplugin.ROUTES["/Plugin.Activate"]({}) == {"Implements": ["NetworkDriver"]}
    caps = netplugin.ROUTES["/NetworkDriver.GetCapabilities"]({})
    assert caps["Scope"] == "local"
