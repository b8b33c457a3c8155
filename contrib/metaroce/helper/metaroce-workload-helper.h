/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_WORKLOAD_HELPER_H
#define METAROCE_WORKLOAD_HELPER_H

#include "metaroce-collective-application.h"
#include "metaroce-flow-application.h"
#include "metaroce-nic.h"
#include "metaroce-traffic-helper.h"

#include "ns3/application-container.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * Workload generators over MetaRoceNics: flows (incast, permutation, all-to-all, htsim
 * connection matrices) with flow completion times, and ring all-reduce collectives, installed
 * as traffic applications (MetaRoceFlowApplication, MetaRoceCollectiveApplication).
 */

namespace ns3
{

class MetaRoceFabric;

/// One line of an htsim connection matrix.
struct MetaRoceHtsimFlow
{
    uint32_t src{0};   //!< source node
    uint32_t dst{0};   //!< destination node
    uint32_t id{0};    //!< flow id (0 if absent)
    double startUs{0}; //!< start time, microseconds
    uint64_t bytes{0}; //!< size
    uint32_t line{0};  //!< line number in the file
};

/// A parsed htsim connection matrix.
struct MetaRoceHtsimMatrix
{
    uint32_t nodes{0};                    //!< "Nodes N"
    uint32_t connections{0};              //!< "Connections C"
    std::vector<MetaRoceHtsimFlow> flows; //!< the flows, in file order
};

/**
 * \ingroup metaroce
 * Generates workloads on the NICs of a fabric and records their outcome: a thin layer over
 * MetaRoceFlowHelper and MetaRoceCollectiveHelper that installs one application per flow and
 * per collective, with absolute start times.
 *
 * Add flows and collectives (each application is installed at once, with the connection
 * configuration set by SetConnectionConfig() at that moment: default, the first NIC's default
 * connection configuration at Setup), run the simulation, then read GetFlows() /
 * GetCollectives(), or GetApplications() for the applications themselves. Each NIC gets one
 * virtual memory region (MetaRoceTrafficHost). Applications installed by other helpers may
 * share the NICs, and SetStopWhenDone stops the simulation when those that ask for it, from
 * every helper, have finished.
 */
class MetaRoceWorkloadHelper : public Object
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceWorkloadHelper();
    ~MetaRoceWorkloadHelper() override;

    /**
     * Attach to a fabric and its NICs (indexed like the fabric's hosts).
     * \param fabric the fabric (for hop counts in the ideal FCT)
     * \param nics the NICs
     */
    void Setup(Ptr<MetaRoceFabric> fabric, const std::vector<Ptr<MetaRoceNic>>& nics);

    /**
     * Set the configuration of the connections created from now on.
     * \param cfg the configuration
     */
    void SetConnectionConfig(const metaroce::ConnectionConfig& cfg);

    /// \return the connection configuration in use.
    const metaroce::ConnectionConfig& GetConnectionConfig() const;

    /**
     * Set what the flows added from now on do (MetaRoceFlowApplication's Operation): WRITEs
     * (the default) or READs, where each flow's host reads the bytes from its peer. Rings are
     * not affected.
     * \param op the operation
     */
    void SetFlowOperation(MetaRoceFlowApplication::Operation op);

    /**
     * Stop the simulator when every flow and collective of this helper (added before or
     * after) and every other traffic application that asks for it has finished.
     * \param stop whether to stop
     */
    void SetStopWhenDone(bool stop);

    /**
     * Add one flow.
     * \param src sender host
     * \param dst receiver host
     * \param bytes payload bytes (at least 1)
     * \param start absolute start time
     * \param id flow id (default: its index)
     * \return the flow index
     */
    uint32_t AddFlow(uint32_t src, uint32_t dst, uint64_t bytes, Time start, int64_t id = -1);

    /**
     * N-to-1 incast: every sender sends \p bytes to \p receiver at \p start.
     * \param senders sender hosts
     * \param receiver receiver host
     * \param bytes bytes per sender
     * \param start start time
     */
    void AddIncast(const std::vector<uint32_t>& senders,
                   uint32_t receiver,
                   uint64_t bytes,
                   Time start);

    /**
     * Permutation: every host sends \p bytes to a distinct other host (a random derangement
     * drawn from \p seed).
     * \param bytes bytes per flow
     * \param start start time
     * \param seed seed of the permutation
     */
    void AddPermutation(uint64_t bytes, Time start, uint64_t seed);

    /**
     * All-to-all: every host of \p hosts sends \p bytes to every other one.
     * \param hosts the hosts (empty = all)
     * \param bytes bytes per flow
     * \param start start time
     */
    void AddAllToAll(std::vector<uint32_t> hosts, uint64_t bytes, Time start);

    /**
     * Ring all-reduce (RCCL-like): 2 (N-1) steps; in each step every rank sends a chunk of
     * bytesPerRank / (N * channels) bytes per channel to its ring successor and, per channel,
     * sends step s+1 as soon as it received step s from its predecessor. Channels are streams
     * of one connection per ring edge (MetaRoCE) or one connection per channel (RoCEv2).
     * \param ranks hosts in ring order (at least 2)
     * \param bytesPerRank buffer size
     * \param channels parallel channels (at least 1)
     * \param start start time
     * \return the collective index
     */
    uint32_t AddRingAllReduce(const std::vector<uint32_t>& ranks,
                              uint64_t bytesPerRank,
                              uint32_t channels,
                              Time start);

    /**
     * Parse an htsim connection matrix: "Nodes N", "Connections C", then one line per flow
     * "src->dst [id k] start <us> size <bytes>" (htsim's trigger fields are accepted and
     * ignored; blank lines and lines starting with '#' are skipped).
     * \param in the text
     * \param[out] out the matrix
     * \param[out] error "line L: what is wrong" when false is returned
     * \return true on success
     */
    static bool ParseHtsimConnectionMatrix(std::istream& in,
                                           MetaRoceHtsimMatrix& out,
                                           std::string& error);

    /**
     * Add the flows of an htsim connection matrix file (node i = host i).
     * \param path the file
     * \param[out] error why it failed
     * \return true on success (no flow is added on failure)
     */
    bool AddHtsimConnectionMatrix(const std::string& path, std::string& error);

    /**
     * Add the flows of a parsed matrix.
     * \param matrix the matrix
     * \param[out] error why it failed (node beyond the fabric)
     * \return true on success (no flow is added on failure)
     */
    bool AddHtsimConnectionMatrix(const MetaRoceHtsimMatrix& matrix, std::string& error);

    /// \return the flows' records, in the order they were added.
    const std::vector<MetaRoceFlow>& GetFlows() const;

    /// \return the applications: the flows', then the collectives', in the order added.
    ApplicationContainer GetApplications() const;

    /// \return the collectives.
    const std::vector<MetaRoceCollective>& GetCollectives() const;

    /// \return true if every flow and collective finished (or failed).
    bool AllDone() const;

    /// \return the number of finished flows.
    uint32_t GetFlowsDone() const;

    /**
     * Write one line per flow: id src dst bytes start_us finish_us fct_us ideal_us slowdown
     * (finish and fct are -1 for unfinished flows), with a header line.
     * \param os the stream
     */
    void WriteFlows(std::ostream& os) const;

    /**
     * Compute the ideal FCT of a flow (see MetaRoceFlow).
     * \param src sender host
     * \param dst receiver host
     * \param bytes payload bytes
     * \return the ideal FCT
     */
    Time IdealFct(uint32_t src, uint32_t dst, uint64_t bytes);

    /**
     * \param src one host
     * \param dst another host
     * \return links on a shortest path between them (plane 0), or 0 if unreachable
     */
    uint32_t HopCount(uint32_t src, uint32_t dst);

  protected:
    void DoDispose() override;

  private:
    /**
     * \param start an absolute time
     * \return the application start time that starts at \p start (at once if it is past)
     */
    static Time StartDelay(Time start);

    std::unique_ptr<MetaRoceFlowHelper> m_flowHelper;             //!< installs flows
    std::unique_ptr<MetaRoceCollectiveHelper> m_collectiveHelper; //!< and collectives
    metaroce::ConnectionConfig m_cfg;                             //!< configuration
    MetaRoceFlowApplication::Operation m_operation{MetaRoceFlowApplication::WRITE}; //!< of flows
    bool m_stopWhenDone{false};                                       //!< stop when done
    std::vector<Ptr<MetaRoceFlowApplication>> m_flowApps;             //!< flows
    std::vector<Ptr<MetaRoceCollectiveApplication>> m_collectiveApps; //!< collectives
    mutable std::vector<MetaRoceFlow> m_flows;                        //!< GetFlows()
    mutable std::vector<MetaRoceCollective> m_collectives;            //!< GetCollectives()
};

} // namespace ns3

#endif // METAROCE_WORKLOAD_HELPER_H
