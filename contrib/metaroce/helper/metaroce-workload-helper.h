/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_WORKLOAD_HELPER_H
#define METAROCE_WORKLOAD_HELPER_H

#include "metaroce-nic.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

/**
 * \file
 * Workload generators over MetaRoceNics: flows (incast, permutation, all-to-all, htsim
 * connection matrices) with flow completion times, and ring all-reduce collectives.
 */

namespace ns3
{

class MetaRoceFabric;

/**
 * One flow: \p bytes from host \p src to host \p dst, posted at \p start as RDMA WRITEs (the
 * last one WRITE_WITH_IMM, so the receiver sees a completion) into a virtual region.
 *
 * FCT = finish - start, where finish is the sender's completion of the last message (the
 * sender knows every byte arrived). The ideal FCT is
 *   idealFct = bytes * 8 / R + baseRtt,
 * with R the smaller of the two NICs' line rates (all planes) and baseRtt the unloaded round
 * trip of one full data packet and its ACK on the shortest path of h links:
 *   baseRtt = 2 h d + h (Tdata + Tack),
 * d the link delay, Tdata the serialization of an MTU-sized datagram plus
 * WIRE_OVERHEAD_BYTES at the host port rate, Tack that of a 64-byte ACK. Slowdown =
 * FCT / idealFct (about 1.02 for an unloaded 4 KiB-MTU flow: the headers).
 */
struct MetaRoceFlow
{
    uint32_t id{0};       //!< flow id (htsim id, or creation order)
    uint32_t src{0};      //!< sender host index
    uint32_t dst{0};      //!< receiver host index
    uint64_t bytes{0};    //!< payload bytes
    Time start;           //!< post time
    Time finish;          //!< sender completion of the last message (valid if done)
    Time receiverFinish;  //!< receiver's completion (valid if received)
    Time idealFct;        //!< ideal FCT (see above)
    bool done{false};     //!< the sender's completion arrived with SUCCESS
    bool received{false}; //!< the receiver's completion arrived with SUCCESS
    bool failed{false};   //!< a completion reported an error
    uint32_t srcQpn{0};   //!< connection on the sender
    uint32_t dstQpn{0};   //!< connection on the receiver

    /// \return finish - start (valid if done).
    Time Fct() const
    {
        return finish - start;
    }

    /// \return Fct() / idealFct.
    double Slowdown() const
    {
        return Fct().GetSeconds() / idealFct.GetSeconds();
    }
};

/// A ring all-reduce collective and its outcome.
struct MetaRoceCollective
{
    std::vector<uint32_t> ranks; //!< host of each rank, in ring order
    uint64_t bytesPerRank{0};    //!< buffer size each rank reduces
    uint32_t channels{1};        //!< parallel channels (streams / QPs)
    uint64_t chunkBytes{0};      //!< bytes per (step, channel) message
    Time start;                  //!< start time
    Time finish;                 //!< the last rank finished (valid if done)
    bool done{false};            //!< every rank received every chunk
    bool failed{false};          //!< a completion reported an error
    uint32_t ranksDone{0};       //!< (rank, channel) pairs finished (on this MPI rank's hosts)
    Time lastRankDone;           //!< when the latest of those pairs finished

    /// \return bytesPerRank / (finish - start) in b/s: NCCL's algorithm bandwidth.
    double AlgorithmBandwidth() const;
    /// \return AlgorithmBandwidth() * 2 (N-1) / N: NCCL's bus bandwidth.
    double BusBandwidth() const;
};

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
 * Generates workloads on the NICs of a fabric and records their outcome.
 *
 * Add flows and collectives, call Install() (or let the first Add schedule itself), run the
 * simulation, then read GetFlows() / GetCollectives(). Each NIC gets one virtual memory region
 * (no bytes: a simulation moves any amount of data without memory). Connections are created
 * when their flow starts (the simulated control plane is instantaneous), with the configuration
 * set by SetConnectionConfig() (default: the first NIC's default connection configuration).
 * The helper listens to the NICs' Completion traces, so applications may share the NICs.
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
     * Stop the simulator when every flow and collective added so far has finished.
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

    /// \return the flows.
    const std::vector<MetaRoceFlow>& GetFlows() const;

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
    /// What a (host, qpn) connection serves.
    struct ConnectionUse
    {
        bool collective{false}; //!< ring all-reduce (else a flow)
        uint32_t index{0};      //!< flow or collective index
        bool sender{false};     //!< this end sends
        uint32_t rank{0};       //!< collective: rank of this end
        uint32_t channel{0};    //!< collective, RoCEv2: channel of this connection
    };

    /// Per-rank-and-channel state of a collective.
    struct RankChannel
    {
        uint32_t sendQpn{0};  //!< connection to the successor
        uint16_t stream{0};   //!< stream on it
        uint32_t received{0}; //!< chunks received
        uint32_t sent{0};     //!< chunks posted
    };

    /**
     * \param host a host
     * \return its virtual region (registered on first use)
     */
    const metaroce::MemoryRegion& Region(uint32_t host);
    /**
     * Start flow \p i.
     * \param i flow index
     */
    void StartFlow(uint32_t i);
    /**
     * Start collective \p i.
     * \param i collective index
     */
    void StartCollective(uint32_t i);
    /**
     * Post the next chunk of a collective.
     * \param c collective index
     * \param rank the sending rank
     * \param channel the channel
     */
    void PostChunk(uint32_t c, uint32_t rank, uint32_t channel);
    /**
     * Completion trace sink.
     * \param host the NIC's host
     * \param completion the completion
     */
    void OnCompletion(uint32_t host, const metaroce::Completion& completion);
    /// Stop the simulator if asked and everything is done.
    void CheckDone();
    /// Distributed runs: the periodic check (on every rank at the same times) whether every
    /// rank's flows are done; stops all ranks when they are.
    void GlobalCheck();

    /**
     * \param host a host
     * \param qpn a connection
     * \return the key of the connection
     */
    static uint64_t Key(uint32_t host, uint32_t qpn)
    {
        return (uint64_t(host) << 32) | qpn;
    }

    Ptr<MetaRoceFabric> m_fabric;                         //!< fabric
    std::vector<Ptr<MetaRoceNic>> m_nics;                 //!< NICs by host
    std::vector<metaroce::MemoryRegion> m_regions;        //!< virtual region by host
    metaroce::ConnectionConfig m_cfg;                     //!< connection configuration
    bool m_stopWhenDone{false};                           //!< stop when all is done
    std::vector<MetaRoceFlow> m_flows;                    //!< flows
    std::vector<MetaRoceCollective> m_collectives;        //!< collectives
    std::vector<std::vector<RankChannel>> m_rankChannels; //!< by collective, rank*ch+ch
    std::unordered_map<uint64_t, ConnectionUse> m_uses;   //!< by Key(host, qpn)
    uint32_t m_flowsFinished{0};                          //!< done or failed flows
    uint32_t m_collectivesFinished{0};                    //!< done or failed collectives
    std::vector<std::vector<int32_t>> m_hopCache;         //!< BFS distances by source host
    std::vector<std::vector<uint32_t>> m_adjacency;       //!< node id -> neighbour ids
    std::vector<int64_t> m_hostOfNode;                    //!< node id -> host index

    /// Distributed runs: the period of the global done check.
    Time m_globalCheckInterval{MicroSeconds(10)};
};

} // namespace ns3

#endif // METAROCE_WORKLOAD_HELPER_H
