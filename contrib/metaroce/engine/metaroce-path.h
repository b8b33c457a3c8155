/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PATH_H
#define METAROCE_PATH_H

#include "metaroce-rtt-estimator.h"
#include "metaroce-time.h"
#include "metaroce-wire.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * The per-path state record that congestion control, loss detection and the path scheduler
 * operate on (as ns-3 TCP's congestion ops operate on TcpSocketState).
 */

namespace metaroce
{

/// Health of a path.
enum class PathStatus : uint8_t
{
    ACTIVE,  //!< carrying data
    SUSPECT, //!< timed out: no data; a probe asks whether it still works
    FAILED,  //!< silent for failureThreshold RTOs: no data, probed on a new source port
};

/// \return the name of \p s.
const char* PathStatusName(PathStatus s);

/// A set of path ids (0..127), for "something is due on these paths".
class PathSet
{
  public:
    /// Add path \p id.
    void Insert(uint32_t id)
    {
        m_bits[id >> 6] |= uint64_t(1) << (id & 63);
    }

    /// \return true if the set is not empty.
    bool Any() const
    {
        return (m_bits[0] | m_bits[1]) != 0;
    }

    /// \return the smallest id (the set must not be empty).
    uint32_t First() const
    {
        uint32_t w = m_bits[0] != 0 ? 0 : 1;
        return w * 64 + uint32_t(__builtin_ctzll(m_bits[w]));
    }

    /// Remove and return the smallest id (the set must not be empty).
    uint32_t PopFirst()
    {
        uint32_t id = First();
        m_bits[id >> 6] &= m_bits[id >> 6] - 1;
        return id;
    }

    /// \return true if path \p id is in the set.
    bool Contains(uint32_t id) const
    {
        return (m_bits[id >> 6] >> (id & 63)) & 1;
    }

    /// Empty the set.
    void Clear()
    {
        m_bits[0] = m_bits[1] = 0;
    }

    /// Add path \p id if \p in, else remove it.
    void Assign(uint32_t id, bool in)
    {
        uint64_t bit = uint64_t(1) << (id & 63);
        m_bits[id >> 6] = in ? (m_bits[id >> 6] | bit) : (m_bits[id >> 6] & ~bit);
    }

    /// \return the paths in both this set and \p other.
    PathSet Intersect(const PathSet& other) const
    {
        PathSet s;
        s.m_bits[0] = m_bits[0] & other.m_bits[0];
        s.m_bits[1] = m_bits[1] & other.m_bits[1];
        return s;
    }

    /**
     * \param other another set
     * \return the members of this set that are not in \p other
     */
    PathSet Without(const PathSet& other) const
    {
        PathSet s;
        s.m_bits[0] = m_bits[0] & ~other.m_bits[0];
        s.m_bits[1] = m_bits[1] & ~other.m_bits[1];
        return s;
    }

    /**
     * \return the smallest id at least \p from, or if there is none the smallest id: the
     * next member in round-robin order from \p from (the set must not be empty; from < 128).
     */
    uint32_t NextFrom(uint32_t from) const
    {
        uint32_t w = from >> 6;
        uint64_t word = m_bits[w] & (~uint64_t(0) << (from & 63));
        if (word != 0)
        {
            return w * 64 + uint32_t(__builtin_ctzll(word));
        }
        if (w == 0 && m_bits[1] != 0)
        {
            return 64 + uint32_t(__builtin_ctzll(m_bits[1]));
        }
        return First(); // wrapped around
    }

    /// \return true if both sets hold the same paths.
    bool operator==(const PathSet& other) const
    {
        return m_bits[0] == other.m_bits[0] && m_bits[1] == other.m_bits[1];
    }

  private:
    uint64_t m_bits[2]{}; //!< bit i of word i/64: path i
};

/// State of one sent packet on a path, indexed by PSN.
struct InflightEntry
{
    /// What became of the packet.
    enum State : uint8_t
    {
        FREE,     //!< slot unused
        INFLIGHT, //!< sent, not acknowledged
        LOST,     //!< declared lost; queued for retransmission on the same PSN
        ACKED,    //!< acknowledged
    };

    uint32_t messageSlot{0};   //!< sender message slot
    uint32_t generation{0};    //!< generation of the slot when sent
    uint32_t packetIndex{0};   //!< packet index within the message
    uint32_t sendOrder{0};     //!< path-local transmission counter (for loss detection)
    Time sentTime{0};          //!< last transmission time
    State state{FREE};         //!< state
    bool retransmitted{false}; //!< sent more than once (no RTT sample: Karn)
    uint8_t timeouts{0};       //!< timeouts the packet went through since progressStamp
    uint32_t progressStamp{0}; //!< the connection's progress count when timeouts was set
};

/// Everything the engine keeps per path.
struct PathState
{
    // (Fields are grouped by size, so that the record has no padding: there is one per path
    // and connection.)
    uint8_t id{0};                         //!< path id carried in MDH
    uint8_t epoch{0};                      //!< PSN-space generation; bumped when the path is reset
    uint16_t sourcePort{0};                //!< UDP source port (ECMP entropy)
    PathStatus status{PathStatus::ACTIVE}; //!< health
    bool anyAcked{false};                  //!< highestAckedOrder is meaningful
    bool lossAwaitsEvidence{false}; //!< a packet is overdue; no later-sent packet arrived yet
    bool lossSuspected{false};      //!< a packet is overdue by time; a probe is to confirm it
    bool confirmOut{false};         //!< a confirmation is asked for (confirmPsn, confirmSent)
    uint8_t confirmProbes{0};       //!< probes sent for it (0: the first is still to go)
    bool hasRetired{false};         //!< the retired* fields describe a retired epoch
    uint8_t retiredEpoch{0};        //!< the retired epoch's number

    // Sequence space
    uint32_t nextPsn{0};  //!< PSN of the next new transmission
    uint32_t ackedPsn{0}; //!< receiver's cumulative PSN: everything before it is acknowledged
    uint32_t inflight{0}; //!< packets sent and neither acknowledged nor declared lost
    uint32_t sackWindow{SACK_BITS}; //!< PSNs allowed past ackedPsn (ConnectionConfig)
    uint32_t sendCounter{0};        //!< transmissions on this path (sendOrder source)
    uint32_t highestAckedOrder{0};  //!< largest sendOrder acknowledged so far
    uint32_t consecutiveRtos{0};    //!< RTOs since the last ACK
    /// TriggerPsn of the repeated ACK record that last acknowledged packets of the path
    /// (NO_REPEAT: none since the last original record): its original, arriving after it,
    /// must not echo the same CE marks again.
    uint32_t repeatedTrigger{NO_REPEAT};
    static constexpr uint32_t NO_REPEAT = 0xFFFFFFFF; //!< (PSNs are 24 bits)
    std::vector<InflightEntry> ring; //!< entries for PSNs [ackedPsn, nextPsn), ring-indexed
    std::vector<uint32_t> lostPsns;  //!< PSNs declared lost, to resend on this path

    // Congestion window (the path's CongestionControl object holds its own state)
    double cwnd{1};   //!< window, packets
    Time lastEcn{-1}; //!< last ECN echo (the scheduler steers away from fresh marks)

    // RTT (the path's deadlines are in the requester's timer table)
    RttEstimator rtt;          //!< RTT estimate and RTO
    uint64_t jitterState{0};   //!< the path's own generator of RTO jitter
    Time lastAck{0};           //!< time of the last ACK for this path
    Time probeSentTime{-1};    //!< when the last probe of this epoch left
    uint32_t probesInEpoch{0}; //!< probes sent in this epoch (one: its reply is an RTT sample)
    uint32_t silentLosses{0};  //!< packets declared lost by time since the path's last ACK
    uint32_t confirmPsn{0};    //!< the path's next PSN when its first confirmation probe left
    uint32_t confirmSerial{0}; //!< PSN field of the last confirmation probe (a 24-bit serial)
    Time confirmFirst{-1};     //!< when the first confirmation probe left
    Time confirmSent{-1};      //!< when the last confirmation probe left (or was asked for)

    // The epoch the last RTO retired, kept for late ACKs: with a round trip above the RTO
    // they are the only RTT samples a path gets, and they prove the packets arrived.
    uint32_t retiredAckedPsn{0};            //!< its cumulative PSN when retired
    uint32_t retiredNextPsn{0};             //!< its next PSN when retired
    std::vector<InflightEntry> retiredRing; //!< its entries (allocated at the first RTO)

    // Statistics
    uint64_t packetsSent{0};     //!< transmissions, including retransmissions
    uint64_t retransmissions{0}; //!< retransmissions
    uint64_t packetsAcked{0};    //!< packets acknowledged
    uint64_t ecnEchoes{0};       //!< CE marks echoed back
    uint64_t timeouts{0};        //!< RTOs

    /// \return the entry for \p psn (must lie in [ackedPsn, nextPsn)).
    InflightEntry& Entry(uint32_t psn)
    {
        return ring[psn & (ring.size() - 1)];
    }

    /// \copydoc Entry()
    const InflightEntry& Entry(uint32_t psn) const
    {
        return ring[psn & (ring.size() - 1)];
    }

    /// \return true if the path may carry data now.
    bool Usable() const
    {
        return status == PathStatus::ACTIVE;
    }

    /// \return true if the path may carry one more new packet: usable, window and SACK room.
    bool HasRoom() const
    {
        return Usable() && inflight < uint32_t(cwnd) &&
               uint32_t(PsnDiff(nextPsn, ackedPsn)) < sackWindow;
    }
};

} // namespace metaroce

#endif // METAROCE_PATH_H
