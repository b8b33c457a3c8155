/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_ENGINE_NETWORK_H
#define METAROCE_TEST_ENGINE_NETWORK_H

#include "metaroce-endpoint.h"
#include "metaroce-random.h"

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <vector>

/**
 * \file
 * Test harness: several sans-I/O endpoints on a fake clock, joined by a tiny fabric model
 * that lives outside the engine. Each endpoint has an egress line (serialisation at its
 * line rate, pulled when idle, like a NIC) and an ingress bottleneck queue (its downlink:
 * drop-tail, optional ECN marking). Every (source, destination, path) has its own link
 * with delay and seeded faults: random and bursty loss, duplication, reordering, a black
 * hole that can start and end at given times, CE marking, and a filter for targeted drops.
 */

namespace metaroce
{
namespace test
{

/// What a fault filter sees of a datagram.
struct WireInfo
{
    uint32_t src;            //!< source endpoint index
    uint32_t dst;            //!< destination endpoint index
    int pathId;              //!< TxDatagram::pathId
    uint8_t opcode;          //!< BTH opcode
    uint32_t psn;            //!< BTH PSN
    bool retransmission;     //!< per the sender's counters (best effort: not known here)
    const ParsedPacket* pkt; //!< parsed datagram
};

/// Faults and delay of one direction of one path.
struct LinkConfig
{
    Time delay{MicroSeconds(2)}; //!< one-way propagation delay
    double rateBps{0};           //!< path bandwidth: a FIFO serialising at this rate (0 = none)
    double loss{0};              //!< Bernoulli loss probability
    double burstStart{0};        //!< P(good -> bad) per packet (Gilbert-Elliott)
    double burstEnd{1};          //!< P(bad -> good) per packet
    double burstLoss{1};         //!< loss probability in the bad state
    double duplicate{0};         //!< probability a packet is delivered twice
    double reorder{0};           //!< probability a packet gets reorderDelay extra delay
    Time reorderDelay{MicroSeconds(3)};          //!< extra delay of reordered packets
    double ceMark{0};                            //!< probability an ECT packet is marked CE
    bool blackHole{false};                       //!< drop everything
    std::function<bool(const WireInfo&)> dropIf; //!< targeted drops (true = drop)
};

/// Settings of the harness.
struct NetworkConfig
{
    double lineRateBps{100e9};             //!< NIC egress rate of every endpoint (0 = infinite)
    double downlinkRateBps{0};             //!< ingress bottleneck rate (0 = none)
    uint64_t downlinkBufferBytes{4 << 20}; //!< ingress queue capacity
    uint64_t ecnThresholdBytes{0};         //!< mark CE above this ingress queue depth (0 = never)
    uint64_t seed{1};                      //!< fault randomness
    /// Endpoints check their derived state where they read it (EndpointConfig::
    /// checkInvariants), and after every pump the pumped endpoint's is checked whole
    /// (Endpoint::CheckInvariants): the first disagreement is kept (InvariantFailure()).
    bool checkInvariants{false};
};

/// A log line per transmitted datagram (for assertions).
struct TxRecord
{
    Time time;           //!< when it left the NIC
    uint32_t src;        //!< sender endpoint
    int pathId;          //!< path
    uint8_t opcode;      //!< BTH opcode
    uint32_t psn;        //!< BTH PSN
    uint32_t messageSeq; //!< MDH message (data packets)
    uint32_t offset;     //!< MDH offset (data packets)
    uint16_t srcPort;    //!< UDP source port
    bool dropped;        //!< dropped by a fault
};

/// Endpoints on a fake clock with a fault-injecting fabric.
class EngineNetwork
{
  public:
    /// Create with \p cfg.
    explicit EngineNetwork(const NetworkConfig& cfg = NetworkConfig());

    /// Add an endpoint at 10.0.0.(index+1). \return its index.
    uint32_t AddEndpoint(EndpointConfig cfg = EndpointConfig());

    /// \return endpoint \p i.
    Endpoint& At(uint32_t i)
    {
        return *m_nodes[i].endpoint;
    }

    /// \return the IPv4 address of endpoint \p i.
    static uint32_t AddressOf(uint32_t i)
    {
        return 0x0a000001 + i;
    }

    /**
     * Create a connection between endpoints \p a and \p b with \p cfg on both sides.
     * \return the pair of QPNs (on a, on b)
     */
    std::pair<uint32_t, uint32_t> Connect(uint32_t a, uint32_t b, const ConnectionConfig& cfg);

    /// \return the link config for datagrams from \p src to \p dst on \p pathId (-1: default).
    LinkConfig& Link(uint32_t src, uint32_t dst, int pathId = -1);
    /// Run \p action at simulated time \p t.
    void At(Time t, std::function<void()> action);
    /// Pump endpoint \p i now (call after posting work requests).
    void Kick(uint32_t i);
    /// Run events until \p t. \return false if events remain after t.
    bool RunUntil(Time t);
    /// Run until no event is left or \p limit. \return true if it went idle before limit.
    bool RunUntilIdle(Time limit);

    /// \return the current time.
    Time Now() const
    {
        return m_now;
    }

    /// \return completions polled from endpoint \p i, in order.
    const std::vector<Completion>& Completions(uint32_t i) const
    {
        return m_nodes[i].completions;
    }

    /// \return every transmission, in order.
    const std::vector<TxRecord>& TxLog() const
    {
        return m_txLog;
    }

    /// Keep a transmission log (off by default: the property test does not need it).
    void EnableTxLog(bool on)
    {
        m_logTx = on;
    }

    /// \return datagrams dropped by faults or queues.
    uint64_t Dropped() const
    {
        return m_dropped;
    }

    /// \return the peak ingress queue depth of endpoint \p i, bytes.
    uint64_t PeakQueue(uint32_t i) const
    {
        return m_nodes[i].peakQueue;
    }

    /**
     * \return the first disagreement NetworkConfig::checkInvariants found, with the time and
     * the endpoint, or "" if none (or the check is off).
     */
    const std::string& InvariantFailure() const
    {
        return m_invariantFailure;
    }

    /// \return the number of events processed.
    uint64_t Events() const
    {
        return m_events;
    }

    /// Called for every completion as it is polled (optional).
    std::function<void(uint32_t, const Completion&)> onCompletion;
    /**
     * Tap on every datagram an endpoint's NIC transmits (optional), called as it leaves the
     * NIC and before the link's faults act on it: the time, the sending endpoint, the
     * datagram (meta as sent, bytes BTH to ICRC, pathId) and whether a fault then dropped it.
     * Capture tools (pcap writers) hook here.
     */
    std::function<void(Time, uint32_t, const TxDatagram&, bool)> onTransmit;

  private:
    /// One endpoint and its NIC model.
    struct Node
    {
        std::unique_ptr<Endpoint> endpoint;  //!< engine
        Time egressFree{0};                  //!< egress line idle from
        bool pullScheduled{false};           //!< a pull event is pending
        Time timerAt{TIME_INFINITE};         //!< pending timer event time
        uint64_t timerGen{0};                //!< invalidates older timer events
        Time ingressFree{0};                 //!< downlink idle from
        uint64_t queueBytes{0};              //!< bytes queued on the downlink
        uint64_t peakQueue{0};               //!< peak of queueBytes
        std::vector<Completion> completions; //!< polled completions
    };

    /// A scheduled event.
    struct Event
    {
        Time time;                 //!< when
        uint64_t seq;              //!< tie breaker (FIFO)
        std::function<void()> run; //!< what

        /// Min-heap order.
        bool operator>(const Event& o) const
        {
            return time != o.time ? time > o.time : seq > o.seq;
        }
    };

    /// Gilbert-Elliott state of a link.
    struct LinkState
    {
        LinkConfig cfg;  //!< configuration
        bool bad{false}; //!< in the bad state
        Time free{0};    //!< the path's own bottleneck is idle from (rateBps > 0)
    };

    void Schedule(Time t, std::function<void()> run);
    void Pump(uint32_t i);
    void Transmit(uint32_t i, const TxDatagram& tx);
    void Arrive(uint32_t dst, DatagramMeta meta, std::vector<uint8_t> bytes);
    void Deliver(uint32_t dst, const DatagramMeta& meta, const std::vector<uint8_t>& bytes);
    LinkState& State(uint32_t src, uint32_t dst, int pathId);

    uint32_t IndexOf(uint32_t ip) const
    {
        return ip - 0x0a000001;
    }

    NetworkConfig m_cfg;                                              //!< configuration
    Rng m_rng;                                                        //!< fault randomness
    std::vector<Node> m_nodes;                                        //!< endpoints
    std::map<std::tuple<uint32_t, uint32_t, int>, LinkState> m_links; //!< per-path links
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> m_events_q; //!< events
    Time m_now{0};                  //!< current time
    uint64_t m_seq{0};              //!< event counter
    uint64_t m_events{0};           //!< processed events
    uint64_t m_dropped{0};          //!< drops
    bool m_logTx{false};            //!< keep m_txLog
    std::vector<TxRecord> m_txLog;  //!< transmissions
    std::vector<uint8_t> m_buffer;  //!< transmit buffer
    std::string m_invariantFailure; //!< first failed invariant check
};

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_ENGINE_NETWORK_H
