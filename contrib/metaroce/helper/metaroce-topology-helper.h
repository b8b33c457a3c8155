/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TOPOLOGY_HELPER_H
#define METAROCE_TOPOLOGY_HELPER_H

#include "metaroce-fabric.h"
#include "metaroce-pcap-helper.h"
#include "metaroce-switch.h"

#include "ns3/data-rate.h"
#include "ns3/node-container.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * Builders of datacenter fabrics: fat trees, leaf-spine, multiplane.
 */

namespace ns3
{

class MetaRoceChannel;
class MetaRoceNetDevice;

/**
 * \ingroup metaroce
 * Builds MetaRoceFabrics: hosts with MetaRoceNetDevice ports, MetaRoceSwitch nodes and
 * MetaRoceChannel links, then installs shortest-path ECMP routes.
 *
 * Topologies (each built SetPlaneCount() times in parallel; host i has one port per plane, all
 * with the same IPv4 address):
 *  - BuildFatTree(k, 3): the k-ary fat tree of Al-Fares et al.: k pods of k/2 edge and k/2
 *    aggregation switches, (k/2)^2 core switches, k^3/4 hosts (k = 16: 1,024 hosts, 320
 *    switches per plane);
 *  - BuildFatTree(k, 2): two tiers of k-port switches: k leaves with k/2 hosts and k/2 uplinks
 *    each, k/2 spines (k^2/2 hosts);
 *  - BuildLeafSpine(leaves, hostsPerLeaf, oversubscription): one link from every leaf to every
 *    spine, with spines = ceil(hostsPerLeaf * hostRate / (oversubscription * fabricRate));
 *  - BuildSingleSwitch(hosts): one switch (incast tests).
 *
 * Addresses: host j under leaf (edge switch) l of plane 0 gets 10.(l / 256).(l % 256).(j + 1),
 * so a leaf holds at most 254 hosts. MAC addresses are locally administered and deterministic:
 * 02:00:00:00:00:01 upwards in creation order.
 *
 * Hosts have no switch logic: frames that reach a host port go to the port's frame receive
 * callback, which the host NIC sets.
 *
 * Every builder returns the fabric and keeps it; the query and fault methods below forward to
 * the last fabric built.
 */
class MetaRoceTopologyHelper : public MetaRocePcapHelper
{
  public:
    MetaRoceTopologyHelper();
    ~MetaRoceTopologyHelper() override;

    /**
     * Set the rate of host-to-switch links (default 100 Gbps).
     * \param rate the rate
     */
    void SetHostLinkRate(DataRate rate);

    /**
     * Set the rate of switch-to-switch links (default 100 Gbps).
     * \param rate the rate
     */
    void SetFabricLinkRate(DataRate rate);

    /**
     * Set the propagation delay of every link (default 1 us).
     * \param delay the delay
     */
    void SetLinkDelay(Time delay);

    /**
     * Build that many identical planes (default 1).
     * \param planes number of planes, at least 1
     */
    void SetPlaneCount(uint32_t planes);

    /**
     * Partition the next fabrics over \p ranks MPI ranks (default 1: everything on rank 0).
     * Nodes get system ids (ns3::Node::GetSystemId) so that links across ranks are few:
     *  - 3-tier fat tree: the hosts, edge and aggregation switches of pod p go to rank p % ranks;
     *    core switch c (c = a * k/2 + i) to rank c % ranks;
     *  - 2-tier fat tree and leaf-spine: leaf l and its hosts to rank l % ranks; spine s to rank
     *    s % ranks;
     *  - single switch: everything on rank 0.
     * Links whose ends are on different ranks are MetaRoceRemoteChannels (needs the module
     * built with MPI; docs/distributed.md). Every rank builds the same fabric.
     * \param ranks number of ranks, at least 1
     */
    void SetRankCount(uint32_t ranks);

    /// \return the number of ranks fabrics are partitioned over.
    uint32_t GetRankCount() const;

    /**
     * Set an attribute of every MetaRoceNetDevice created (DataRate is set per link).
     * \param name attribute name
     * \param value its value
     */
    void SetDeviceAttribute(std::string name, const AttributeValue& value);

    /**
     * Set an attribute of every MetaRoceChannel created (Delay is set by SetLinkDelay).
     * \param name attribute name
     * \param value its value
     */
    void SetChannelAttribute(std::string name, const AttributeValue& value);

    /**
     * Set an attribute of every MetaRoceSwitch created (buffer, ECN, PFC, ...).
     * \param name attribute name
     * \param value its value
     */
    void SetSwitchAttribute(std::string name, const AttributeValue& value);

    /**
     * Set an attribute of the fabric (e.g. ReconvergenceDelay).
     * \param name attribute name
     * \param value its value
     */
    void SetFabricAttribute(std::string name, const AttributeValue& value);

    /**
     * Shorthand for the switch attributes BufferPreset and BufferSize.
     * \param preset the preset
     * \param bytes explicit size in bytes; 0 takes the preset
     */
    void SetBuffer(MetaRoceSwitch::BufferPreset preset, uint64_t bytes = 0);

    /**
     * Shorthand for the switch ECN attributes (RED when kmin < kmax, step when equal).
     * \param enabled whether switches mark
     * \param kmin EcnKmin in bytes
     * \param kmax EcnKmax in bytes
     * \param pmax EcnPmax
     */
    void SetEcn(bool enabled, uint64_t kmin, uint64_t kmax, double pmax);

    /**
     * Shorthand for the switch attribute PfcEnabled.
     * \param enabled whether switches send PFC
     */
    void SetPfc(bool enabled);

    /**
     * Build a k-ary fat tree.
     * \param k switch radix, even, at least 2
     * \param tiers 2 or 3
     * \return the fabric
     */
    Ptr<MetaRoceFabric> BuildFatTree(uint32_t k, uint32_t tiers = 3);

    /**
     * Build a leaf-spine fabric.
     * \param leaves number of leaves
     * \param hostsPerLeaf hosts under each leaf (at most 254)
     * \param oversubscription leaf downlink capacity over uplink capacity (>= 1 typical)
     * \return the fabric
     */
    Ptr<MetaRoceFabric> BuildLeafSpine(uint32_t leaves,
                                       uint32_t hostsPerLeaf,
                                       double oversubscription = 1.0);

    /**
     * Build one switch with \p hosts hosts.
     * \param hosts number of hosts (at most 254)
     * \return the fabric
     */
    Ptr<MetaRoceFabric> BuildSingleSwitch(uint32_t hosts);

    /// \return the last fabric built (nullptr before any).
    Ptr<MetaRoceFabric> GetFabric() const;

    /// \return the number of hosts.
    uint32_t GetHostCount() const;

    /**
     * \param i host index
     * \return the host node
     */
    Ptr<Node> GetHost(uint32_t i) const;

    /**
     * \param i host index
     * \return its IPv4 address, host order
     */
    uint32_t GetHostAddress(uint32_t i) const;

    /**
     * \param i host index
     * \return its ports, one per plane
     */
    std::vector<Ptr<MetaRoceNetDevice>> GetHostPorts(uint32_t i) const;

    /// \return the switch nodes.
    NodeContainer GetSwitches() const;

    /// \return every link.
    const std::vector<MetaRoceLink>& GetLinks() const;

    /**
     * \param a one node
     * \param b another node
     * \return the first link between them, or nullptr
     */
    Ptr<MetaRoceChannel> GetChannel(Ptr<Node> a, Ptr<Node> b) const;

    /**
     * Take the link between two nodes down (absolute times).
     * \param a one node
     * \param b the other node
     * \param start failure time
     * \param stop recovery time; Time::Max() for never
     */
    void FailLink(Ptr<Node> a, Ptr<Node> b, Time start, Time stop);

    /**
     * Take every link of a plane down (absolute times).
     * \param plane the plane
     * \param start failure time
     * \param stop recovery time; Time::Max() for never
     */
    void FailPlane(uint32_t plane, Time start, Time stop);

    /**
     * Run the link between two nodes at a fraction of its rate (absolute times).
     * \param a one node
     * \param b the other node
     * \param fraction rate factor in (0, 1]
     * \param start start time
     * \param stop end time; Time::Max() for never
     */
    void DegradeLink(Ptr<Node> a, Ptr<Node> b, double fraction, Time start, Time stop);

    /**
     * Enable pcap on every host port.
     * \param prefix file name prefix
     */
    void EnablePcapHosts(std::string prefix);

  private:
    /// Start a new fabric.
    void Begin();
    /**
     * Create a host.
     * \param address its IPv4 address
     * \param group its partition group (pod or leaf): rank group % ranks
     * \return the node
     */
    Ptr<Node> NewHost(uint32_t address, uint32_t group = 0);
    /**
     * Create a switch.
     * \param plane its plane
     * \param group its partition group: rank group % ranks
     * \return the node
     */
    Ptr<Node> NewSwitch(uint32_t plane, uint32_t group = 0);
    /**
     * Link two nodes.
     * \param a first node
     * \param b second node
     * \param rate the rate of both ends
     * \param plane the plane
     */
    void Connect(Ptr<Node> a, Ptr<Node> b, DataRate rate, uint32_t plane);
    /// Compute routes and return.
    void Finish();

    DataRate m_hostRate;            //!< host link rate
    DataRate m_fabricRate;          //!< switch link rate
    Time m_delay;                   //!< link delay
    uint32_t m_planes{1};           //!< planes
    ObjectFactory m_deviceFactory;  //!< device attributes
    ObjectFactory m_channelFactory; //!< channel attributes
    ObjectFactory m_switchFactory;  //!< switch attributes
    ObjectFactory m_fabricFactory;  //!< fabric attributes
    Ptr<MetaRoceFabric> m_fabric;   //!< the fabric being or last built
    uint64_t m_nextMac{1};          //!< next MAC address suffix
    uint32_t m_ranks{1};            //!< MPI ranks the fabric is partitioned over
};

} // namespace ns3

#endif // METAROCE_TOPOLOGY_HELPER_H
