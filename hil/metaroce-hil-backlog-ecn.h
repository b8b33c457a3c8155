/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_BACKLOG_ECN_H
#define METAROCE_HIL_BACKLOG_ECN_H

#include "metaroce-datagram.h" // Ecn

#include <cstdint>
#include <string>

/**
 * \file
 * Our model [M] of the congested queue of a software receiver. A NIC's or switch's queue marks
 * CE when it is deep; a veth pair or a host's UDP socket has no such queue, so without this a
 * sender's ECN-driven congestion control never hears that the receiving process falls behind,
 * and its window fills the socket. The ports treat their own kernel receive queue (socket or
 * ring) as that queue: a datagram read while more than a threshold of datagrams had been
 * queued since the queue was last found empty is marked CE on arrival (if it is ECN-capable),
 * as a DCTCP-style switch marks on instantaneous depth. See docs/hil.md, "Timers on real
 * links".
 */

namespace metaroce
{
namespace hil
{

/// Default threshold: datagrams (one receive batch) the kernel queue may hold unmarked.
constexpr uint32_t BACKLOG_ECN_DEFAULT = 32;

/**
 * The threshold --backlog-ecn auto gives a port that carries \p transport: the default for
 * "metaroce"; 0 (off) for "rocev2", whose DCQCN answers the marks' CNPs with rate cuts that
 * cost more goodput on a veth than the marks save (docs/hil.md). Also 0 for a port that
 * \p deliversInBlocks (TPACKET_V3): it holds frames back on purpose until a block fills or its
 * retire timer fires, so a long run of frames there is that timer's, not a receiver that fell
 * behind; marking it cut MetaRoCE's windows to 2-4 packets (1.2 Gb/s against 5.2 unmarked).
 */
inline uint32_t
AutoBacklogEcn(const std::string& transport, bool deliversInBlocks = false)
{
    return transport == "rocev2" || deliversInBlocks ? 0 : BACKLOG_ECN_DEFAULT;
}

/**
 * Marks CE on datagrams that waited behind a deep kernel receive queue. The port calls
 * OnDatagram() for every datagram in the order it reads them and OnQueueEmpty() whenever a
 * read finds the queue empty (a batch shorter than asked for); the position of a datagram in
 * the run of reads since the queue was last empty is the depth of the queue it arrived at.
 * I/O-free, so it is unit-tested without sockets.
 */
class BacklogEcn
{
  public:
    /// \param threshold datagrams a run may hold before the rest are marked (0: never mark)
    explicit BacklogEcn(uint32_t threshold = BACKLOG_ECN_DEFAULT)
        : m_threshold(threshold)
    {
    }

    /// \return the ECN field to hand to the engine for a datagram that arrived with \p ecn.
    Ecn OnDatagram(Ecn ecn)
    {
        ++m_run;
        if (m_threshold == 0 || m_run <= m_threshold || ecn == Ecn::NOT_ECT || ecn == Ecn::CE)
        {
            return ecn;
        }
        ++m_marked;
        return Ecn::CE;
    }

    /// A read found the kernel queue empty: the next datagram starts a new run.
    void OnQueueEmpty()
    {
        m_run = 0;
    }

    /// \return datagrams marked CE so far.
    uint64_t Marked() const
    {
        return m_marked;
    }

    /// Mark beyond \p threshold datagrams from now on (0: never).
    void SetThreshold(uint32_t threshold)
    {
        m_threshold = threshold;
    }

    /// \return the threshold (0: off).
    uint32_t Threshold() const
    {
        return m_threshold;
    }

  private:
    uint32_t m_threshold; //!< datagrams a run holds unmarked
    uint32_t m_run{0};    //!< datagrams read since the queue was last empty
    uint64_t m_marked{0}; //!< datagrams marked
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_BACKLOG_ECN_H
