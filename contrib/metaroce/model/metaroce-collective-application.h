/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_COLLECTIVE_APPLICATION_H
#define METAROCE_COLLECTIVE_APPLICATION_H

#include "metaroce-traffic-application.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * A ring all-reduce collective as an ns-3 Application: MetaRoceCollective (its record) and
 * MetaRoceCollectiveApplication.
 */

namespace ns3
{

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

/**
 * \ingroup metaroce
 * Ring all-reduce (RCCL-like) over the NICs of its ranks, installed on the node of rank 0: 2
 * (N-1) steps; in each step every rank sends a chunk of bytesPerRank / (N * channels) bytes per
 * channel to its ring successor and, per channel, sends step s+1 as soon as it received step s
 * from its predecessor. Channels are streams of one connection per ring edge (MetaRoCE) or one
 * connection per channel (RoCEv2). The collective has its own connection configuration.
 */
class MetaRoceCollectiveApplication : public MetaRoceTrafficApplication
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceCollectiveApplication();
    ~MetaRoceCollectiveApplication() override;

    /**
     * Set the ring (aborts on fewer than two ranks, no channel or a chunk larger than the
     * configuration's MaxMessageSize).
     * \param nics the NIC of each rank, in ring order
     * \param hosts the host index of each rank (for the record)
     * \param bytesPerRank the buffer each rank reduces
     * \param channels parallel channels (at least 1)
     * \param cfg the connection configuration
     */
    void SetRing(const std::vector<Ptr<MetaRoceNic>>& nics,
                 const std::vector<uint32_t>& hosts,
                 uint64_t bytesPerRank,
                 uint32_t channels,
                 const metaroce::ConnectionConfig& cfg);

    /// \return the collective's record: its start time (the time it started, or the
    /// application's start time until then), and its outcome once known.
    MetaRoceCollective GetCollective() const;

    /// Distributed runs: finished once every (rank, channel) pair finished or a rank failed.
    bool CheckFinishedOnAllRanks(bool& finished) const override;

  protected:
    void DoDispose() override;

  private:
    void StartApplication() override;
    void StopApplication() override;

    /// Per-rank-and-channel state.
    struct RankChannel
    {
        uint32_t sendQpn{0};  //!< connection to the successor
        uint16_t stream{0};   //!< stream on it
        uint32_t received{0}; //!< chunks received
        uint32_t sent{0};     //!< chunks posted
    };

    /**
     * Post the next chunk.
     * \param rank the sending rank
     * \param channel the channel
     */
    void PostChunk(uint32_t rank, uint32_t channel);
    /**
     * Completion of one of the collective's connections.
     * \param sender whether at the sending end
     * \param rank the rank at this end
     * \param channel RoCEv2: the connection's channel
     * \param completion the completion
     */
    void OnCompletion(bool sender,
                      uint32_t rank,
                      uint32_t channel,
                      const metaroce::Completion& completion);
    /// Record a failure and finish.
    void Fail();

    std::vector<Ptr<MetaRoceNic>> m_nics;    //!< NIC of each rank
    metaroce::ConnectionConfig m_cfg;        //!< connection configuration
    bool m_stopped{false};                   //!< StopApplication ran
    bool m_started{false};                   //!< StartApplication ran
    MetaRoceCollective m_record;             //!< the record
    std::vector<RankChannel> m_rankChannels; //!< by rank * channels + channel
};

} // namespace ns3

#endif // METAROCE_COLLECTIVE_APPLICATION_H
