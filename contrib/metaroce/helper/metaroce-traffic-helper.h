/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TRAFFIC_HELPER_H
#define METAROCE_TRAFFIC_HELPER_H

#include "metaroce-collective-application.h"
#include "metaroce-flow-application.h"

#include "ns3/application-container.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * Helpers that install the traffic applications (MetaRoceFlowApplication,
 * MetaRoceCollectiveApplication) on the hosts of a fabric and return ApplicationContainers.
 */

namespace ns3
{

class MetaRoceFabric;

/**
 * \ingroup metaroce
 * What the traffic helpers share: the NICs by host index, the connection configuration given
 * to each application they install (read at Install, so helpers, and one helper over time, can
 * install applications with different configurations), and whether the applications end the
 * simulation when all of them (from every helper) have finished.
 */
class MetaRoceTrafficHelper
{
  public:
    /**
     * \param fabric the fabric (hop counts for the ideal FCT; may be null, then 0 hops)
     * \param nics the NIC of each host, by host index (at least one)
     */
    MetaRoceTrafficHelper(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics);

    /**
     * Set the connection configuration of the applications installed from now on (default: the
     * sending NIC's default connection configuration at Install).
     * \param cfg the configuration
     */
    void SetConnectionConfig(const metaroce::ConnectionConfig& cfg);

    /// \return whether SetConnectionConfig was called.
    bool HasConnectionConfig() const;

    /**
     * \param host a host
     * \return the configuration an application installed now on \p host gets
     */
    metaroce::ConnectionConfig GetConnectionConfig(uint32_t host) const;

    /**
     * Make the applications installed from now on end the simulation when all applications
     * that do so have finished (MetaRoceTrafficApplication::SetStopWhenDone).
     * \param stop whether they do
     */
    void SetStopWhenDone(bool stop);

    /// \return the number of hosts.
    uint32_t GetHostCount() const;

    /**
     * \param host a host index (aborts beyond the hosts)
     * \return its NIC
     */
    Ptr<MetaRoceNic> GetNic(uint32_t host) const;

    /**
     * \param src one host
     * \param dst another host
     * \return links on a shortest path between them (plane 0), or 0 if unreachable
     */
    uint32_t HopCount(uint32_t src, uint32_t dst);

    /**
     * Compute the ideal FCT of a flow (see MetaRoceFlow).
     * \param src sender host
     * \param dst receiver host
     * \param bytes payload bytes
     * \param mtu the connection's MTU
     * \return the ideal FCT
     */
    Time IdealFct(uint32_t src, uint32_t dst, uint64_t bytes, uint32_t mtu);

  protected:
    /**
     * Prepare the per-NIC traffic state of \p host (MetaRoceTrafficHost), so that it listens to
     * the NIC's completions from Install on.
     * \param host a host
     */
    void PrepareHost(uint32_t host);

    bool m_stopWhenDone{false}; //!< installed applications stop the simulation when done

  private:
    Ptr<MetaRoceFabric> m_fabric;                   //!< fabric
    std::vector<Ptr<MetaRoceNic>> m_nics;           //!< NICs by host
    metaroce::ConnectionConfig m_cfg;               //!< configuration given to applications
    bool m_haveConfig{false};                       //!< SetConnectionConfig was called
    std::vector<std::vector<uint16_t>> m_hopCache;  //!< source host -> hops to each host (0: none)
    std::vector<int32_t> m_bfsScratch;              //!< BFS distances by node id (reused)
    std::vector<std::vector<uint32_t>> m_adjacency; //!< node id -> neighbour ids
    std::vector<int64_t> m_hostOfNode;              //!< node id -> host index
};

/**
 * \ingroup metaroce
 * Installs flows (MetaRoceFlowApplication) on the sending host, each with the connection
 * configuration in effect at Install:
 *
 * \code
 *   MetaRoceFlowHelper flows(fabric, nics);
 *   ApplicationContainer a = flows.Install(0, 1, 1 << 20); // MetaRoCE (the NIC default)
 *   metaroce::ConnectionConfig roce = nics[2]->GetDefaultConnectionConfig();
 *   roce.transport = "rocev2";
 *   flows.SetConnectionConfig(roce);
 *   ApplicationContainer b = flows.Install(2, 3, 1 << 20); // RoCEv2
 *   a.Start(MicroSeconds(1));
 *   b.Start(MicroSeconds(1));
 * \endcode
 */
class MetaRoceFlowHelper : public MetaRoceTrafficHelper
{
  public:
    /**
     * \param fabric the fabric (may be null)
     * \param nics the NIC of each host, by host index
     */
    MetaRoceFlowHelper(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics);

    /**
     * Set an attribute of the flows installed from now on (ns3::MetaRoceFlowApplication).
     * \param name the attribute
     * \param value its value
     */
    void SetAttribute(const std::string& name, const AttributeValue& value);

    /**
     * Install one flow of \p bytes from host \p src to host \p dst (aborts with a message on a
     * host beyond the fabric, a flow to itself, an empty flow or one that needs more messages
     * than the configuration's MaxOutstandingWrs). Its FlowId is \p id, or the number of flows
     * this helper installed before it.
     * \param src sender host
     * \param dst receiver host
     * \param bytes payload bytes
     * \param id flow id (default: install order)
     * \return the application, on the sender's node
     */
    ApplicationContainer Install(uint32_t src, uint32_t dst, uint64_t bytes, int64_t id = -1);

  private:
    ObjectFactory m_factory; //!< ns3::MetaRoceFlowApplication
    uint32_t m_installed{0}; //!< flows installed
};

/**
 * \ingroup metaroce
 * Installs ring all-reduce collectives (MetaRoceCollectiveApplication) on the node of their
 * first rank, each with the connection configuration in effect at Install.
 */
class MetaRoceCollectiveHelper : public MetaRoceTrafficHelper
{
  public:
    /**
     * \param fabric the fabric (may be null)
     * \param nics the NIC of each host, by host index
     */
    MetaRoceCollectiveHelper(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics);

    /**
     * Install a ring all-reduce (aborts with a message on fewer than two ranks, a rank beyond
     * the fabric, no channel, or a chunk larger than MaxMessageSize).
     * \param ranks hosts in ring order
     * \param bytesPerRank buffer size
     * \param channels parallel channels
     * \return the application, on the node of ranks[0]
     */
    ApplicationContainer Install(const std::vector<uint32_t>& ranks,
                                 uint64_t bytesPerRank,
                                 uint32_t channels);
};

} // namespace ns3

#endif // METAROCE_TRAFFIC_HELPER_H
