/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_FABRIC_H
#define METAROCE_FABRIC_H

#include "ns3/data-rate.h"
#include "ns3/error-model.h"
#include "ns3/event-id.h"
#include "ns3/node-container.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * A built network of hosts, MetaRoceSwitches and MetaRoceChannels, with its routing control
 * plane and fault scheduling.
 */

namespace ns3
{

class MetaRoceChannel;
class MetaRoceNetDevice;
class MetaRoceSwitch;
class Node;

/// One link of a fabric.
struct MetaRoceLink
{
    Ptr<MetaRoceChannel> channel;   //!< the channel
    Ptr<Node> nodeA;                //!< node of device 0
    Ptr<Node> nodeB;                //!< node of device 1
    Ptr<MetaRoceNetDevice> deviceA; //!< device 0
    Ptr<MetaRoceNetDevice> deviceB; //!< device 1
    uint32_t portA;                 //!< switch port index of deviceA (NO_PORT on a host)
    uint32_t portB;                 //!< switch port index of deviceB (NO_PORT on a host)
    uint32_t plane;                 //!< plane the link belongs to
};

/**
 * \ingroup metaroce
 * The network a MetaRoceTopologyHelper builds: hosts (each with one IPv4 address and one port
 * per plane), switches, links, and the routing control plane.
 *
 * Routing: ComputeRoutes() runs, for each group of hosts attached to the same switches, one
 * multi-source breadth-first search over the switch graph (links that are up only) and installs
 * in every switch a /32 route per host to the ECMP group of all next hops on shortest paths.
 *
 * Failures: switches skip dead ECMP members at once (local repair, see MetaRoceSwitch). When
 * a link changes state the fabric also recomputes every route after ReconvergenceDelay (a
 * model of the routing protocol's convergence), so that remote switches stop sending towards
 * a dead link. Time::Max() turns recomputation off.
 */
class MetaRoceFabric : public Object
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceFabric();
    ~MetaRoceFabric() override;

    /**
     * Register a host.
     * \param node the host node
     * \param address its IPv4 address, host order
     * \return the host index
     */
    uint32_t AddHost(Ptr<Node> node, uint32_t address);

    /**
     * Register a switch; \p node must have a MetaRoceSwitch aggregated.
     * \param node the switch node
     * \param plane its plane
     * \return the switch index
     */
    uint32_t AddSwitch(Ptr<Node> node, uint32_t plane);

    /**
     * Register a link whose two devices are attached to \p channel and sit on registered
     * nodes; switch-side devices must already be ports of their switch. A host-side device
     * becomes one of the host's ports.
     * \param channel the channel
     * \param plane its plane
     * \return the link index
     */
    uint32_t AddLink(Ptr<MetaRoceChannel> channel, uint32_t plane);

    /// Recompute and install every route (links that are down are avoided).
    void ComputeRoutes();

    /// \return the number of hosts.
    uint32_t GetHostCount() const;

    /**
     * \param i host index
     * \return the host node
     */
    Ptr<Node> GetHost(uint32_t i) const;

    /**
     * \param i host index
     * \return its IPv4 address, host order (the same in every plane)
     */
    uint32_t GetHostAddress(uint32_t i) const;

    /**
     * \param i host index
     * \return its ports, one per plane, in plane order
     */
    std::vector<Ptr<MetaRoceNetDevice>> GetHostPorts(uint32_t i) const;

    /**
     * \param address an IPv4 address, host order
     * \return the host index, or -1
     */
    int64_t FindHost(uint32_t address) const;

    /// \return the number of switches.
    uint32_t GetSwitchCount() const;

    /**
     * \param i switch index
     * \return the switch node
     */
    Ptr<Node> GetSwitchNode(uint32_t i) const;

    /**
     * \param i switch index
     * \return the switch
     */
    Ptr<MetaRoceSwitch> GetSwitch(uint32_t i) const;

    /**
     * \param i switch index
     * \return its plane
     */
    uint32_t GetSwitchPlane(uint32_t i) const;

    /// \return all switch nodes.
    NodeContainer GetSwitches() const;

    /// \return all host nodes.
    NodeContainer GetHosts() const;

    /// \return the number of planes (highest plane index plus one).
    uint32_t GetPlaneCount() const;

    /// \return every link.
    const std::vector<MetaRoceLink>& GetLinks() const;

    /**
     * \param a one node
     * \param b another node
     * \return the first link between them, or nullptr
     */
    Ptr<MetaRoceChannel> GetChannel(Ptr<Node> a, Ptr<Node> b) const;

    /**
     * Take a link down between two absolute simulation times.
     * \param channel the link
     * \param start failure time
     * \param stop recovery time; Time::Max() for never
     */
    void FailLink(Ptr<MetaRoceChannel> channel, Time start, Time stop);

    /**
     * Take the first link between two nodes down between two absolute simulation times.
     * \param a one node
     * \param b the other node
     * \param start failure time
     * \param stop recovery time; Time::Max() for never
     */
    void FailLink(Ptr<Node> a, Ptr<Node> b, Time start, Time stop);

    /**
     * Take every link of a plane down (host links included).
     * \param plane the plane
     * \param start failure time
     * \param stop recovery time; Time::Max() for never
     */
    void FailPlane(uint32_t plane, Time start, Time stop);

    /**
     * Run a link at a fraction of its rate between two absolute simulation times.
     * \param channel the link
     * \param fraction rate factor in (0, 1]
     * \param start start time
     * \param stop end time; Time::Max() for never
     */
    void DegradeLink(Ptr<MetaRoceChannel> channel, double fraction, Time start, Time stop);

    /**
     * Give both directions of a link independent Bernoulli (per-packet) loss with ns-3's
     * RateErrorModel. Call it before AssignStreams (the channel aborts otherwise). Aborts on a
     * null channel or a rate outside [0, 1].
     * \param channel the link
     * \param rate loss probability per frame, in [0, 1]
     */
    void SetBernoulliLoss(Ptr<MetaRoceChannel> channel, double rate);

    /**
     * Give both directions of a link independent Gilbert-Elliott bursty loss. Call it before
     * AssignStreams (the channel aborts otherwise). Aborts on a null channel or a probability
     * outside [0, 1].
     * \param channel the link
     * \param goodToBad p
     * \param badToGood r
     * \param goodLossRate h_G
     * \param badLossRate h_B
     */
    void SetGilbertElliottLoss(Ptr<MetaRoceChannel> channel,
                               double goodToBad,
                               double badToGood,
                               double goodLossRate,
                               double badLossRate);

    /**
     * Assign fixed random variable streams to the switches and the links' error models. Add
     * every loss model first: a link's channel refuses (aborts on) an error model set after
     * this, whose draws would otherwise come from an unpinned stream and change with unrelated
     * code.
     * \param stream first stream index
     * \return the number of streams used
     */
    int64_t AssignStreams(int64_t stream);

    /// \return how many times routes were computed.
    uint64_t GetRouteComputations() const;

  protected:
    void DoDispose() override;

  private:
    /// Disconnect from the links' trace sources and forget the links.
    void DisconnectLinks();
    /**
     * A link changed state.
     * \param up the new state
     */
    void LinkStateChanged(bool up);

    /// What a node is in this fabric.
    struct Role
    {
        bool isHost{false};     //!< a host (else a switch)
        uint32_t index{0};      //!< host or switch index
        bool registered{false}; //!< part of this fabric
    };

    /**
     * \param node a node
     * \return its role (aborts if it is not registered)
     */
    const Role& GetRole(Ptr<Node> node) const;

    Time m_reconvergenceDelay; //!< ReconvergenceDelay

    std::vector<Ptr<Node>> m_hosts;                               //!< host nodes
    std::vector<uint32_t> m_hostAddresses;                        //!< host addresses
    std::vector<std::vector<Ptr<MetaRoceNetDevice>>> m_hostPorts; //!< host ports by plane
    std::vector<std::vector<uint32_t>> m_hostPortPlanes;          //!< plane of each host port
    std::vector<Ptr<Node>> m_switchNodes;                         //!< switch nodes
    std::vector<Ptr<MetaRoceSwitch>> m_switches;                  //!< switches
    std::vector<uint32_t> m_switchPlanes;                         //!< switch planes
    std::vector<MetaRoceLink> m_links;                            //!< links
    std::vector<Role> m_roles;                                    //!< by node id
    uint32_t m_planeCount{0};                                     //!< planes
    uint64_t m_routeComputations{0};                              //!< ComputeRoutes calls
    Time m_pendingRecomputeAt{Time::Min()};                       //!< scheduled recompute
    TracedCallback<> m_routesComputedTrace;                       //!< routes installed
};

} // namespace ns3

#endif // METAROCE_FABRIC_H
