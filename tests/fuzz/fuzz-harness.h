/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_FUZZ_HARNESS_H
#define METAROCE_FUZZ_HARNESS_H

#include "metaroce-endpoint.h"

#include <cstddef>
#include <cstdint>
#include <vector>

/**
 * \file
 * The endpoint under test of the HandleDatagram fuzz targets (fuzz-metaroce.cc,
 * fuzz-rocev2.cc) and the input format they share with the seed generator (make-seeds.cc).
 *
 * An input is one mode byte, which picks the connection's configuration (MakeConnectionConfig),
 * then records, each a step of the host's event loop:
 * \verbatim
   +-------+----------------+----------------+---------------------------------+
   | flags | delta (16, LE) | length (16, LE)| length bytes: BTH .. ICRC        |
   +-------+----------------+----------------+---------------------------------+
 \endverbatim
 * A step advances the fake clock by delta * TICK, runs the timers that are due, hands the
 * datagram to the endpoint as if the peer had sent it, and pumps the endpoint (PollTransmit,
 * PollCompletion) as a host does; the flags vary that (RecordFlag). The harness writes a
 * valid ICRC into every datagram unless KEEP_ICRC is set, so that mutated headers reach the
 * transport instead of stopping at the CRC check.
 *
 * The endpoint under test is endpoint 1 of the testbed (tests/support/engine-network.h) and
 * its peer endpoint 0: the seed generator runs both sides with SetUpSide() and records what
 * endpoint 1 receives, so that a seed replays a real conversation with matching QPNs, PSNs,
 * keys and addresses.
 */

namespace metaroce
{
namespace fuzz
{

/// The transport a fuzz target exercises.
enum class Kind : uint8_t
{
    METAROCE, //!< MultipathConnection
    ROCEV2,   //!< RoceV2Connection
};

/// \return the transport name of \p kind ("metaroce" or "rocev2").
const char* KindName(Kind kind);

constexpr uint32_t PEER_IP = 0x0a000001;  //!< the peer: testbed endpoint 0
constexpr uint32_t LOCAL_IP = 0x0a000002; //!< the endpoint under test: testbed endpoint 1
constexpr Time TICK = 64;                 //!< nanoseconds per unit of a record's delta
constexpr size_t RECORD_HEADER_SIZE = 5;  //!< flags, delta, length
/// Longest datagram a record carries (more than any datagram of the connection's mtu).
constexpr size_t MAX_RECORD_LENGTH = 2048;

/// What a record does besides delivering its datagram.
enum RecordFlag : uint8_t
{
    FIRE_TIMER = 0x01,   //!< afterwards, jump the clock to the next deadline and run it
    CE = 0x02,           //!< the datagram arrives CE-marked (else ECT(0))
    KEEP_ICRC = 0x04,    //!< deliver the ICRC as given (usually wrong)
    WRONG_SOURCE = 0x08, //!< the datagram comes from an address that is not the peer's
    NO_PUMP = 0x10,      //!< the host does not poll transmit or completions after this step
    POST_RECV = 0x20,    //!< the host posts one more receive first
    POST_SEND = 0x40,    //!< the host posts one more send first
    NO_DATAGRAM = 0x80,  //!< a step without a datagram (the length field is ignored)
};

/// \return the endpoint configuration of \p kind and \p mode at address \p ip.
EndpointConfig MakeEndpointConfig(Kind kind, uint8_t mode, uint32_t ip);

/**
 * \return the connection configuration of \p kind selected by the mode byte. MetaRoCE: bits
 * 0-1 the number of paths (1, 2, 4, 8), bit 2 DCTCP (else AIMD), bit 3 the single-path
 * scheduler (else spray), bit 4 no rate hints (MakeEndpointConfig). RoCEv2: bit 0 IRN (else
 * go-back-N), bit 1 no DCQCN, bit 2 an ACK per packet (else per 4), bit 3 at most 8 packets
 * in flight. Both ends of a seed use the same mode.
 */
ConnectionConfig MakeConnectionConfig(Kind kind, uint8_t mode);

/**
 * One side's registered memory: four regions at fixed I/O addresses in one allocation,
 * separated by guard bytes that AddressSanitizer poisons, so the engine touching memory
 * outside a region is reported where it happens.
 */
class Arena
{
  public:
    static constexpr uint32_t SOURCE_SIZE = 4096;       //!< send buffers (local read only)
    static constexpr uint32_t TARGET_SIZE = 4096;       //!< WRITE target (remote write)
    static constexpr uint32_t RECV_SLOT_SIZE = 1024;    //!< one posted receive's buffer
    static constexpr uint32_t RECV_SLOTS = 8;           //!< receive buffers, reused in turn
    static constexpr uint32_t PROTECTED_SIZE = 1024;    //!< remote read only: never written
    static constexpr uint64_t SOURCE_IOVA = 0x10000;    //!< I/O address of the source region
    static constexpr uint64_t TARGET_IOVA = 0x20000;    //!< I/O address of the WRITE target
    static constexpr uint64_t RECV_IOVA = 0x30000;      //!< I/O address of the receive buffers
    static constexpr uint64_t PROTECTED_IOVA = 0x40000; //!< I/O address of the protected region

    /// Allocate, fill with known patterns and poison the guards.
    Arena();
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    /// Register the regions with \p ep in a fixed order (so both sides get the same keys).
    void Register(Endpoint& ep);
    /// \return true if the regions the engine must never write still hold their patterns.
    bool ReadOnlyRegionsIntact() const;

    MemoryRegion source;          //!< send buffers
    MemoryRegion target;          //!< the peer's WRITEs land here
    MemoryRegion recv;            //!< receive buffers
    MemoryRegion protectedRegion; //!< registered without write access

  private:
    /// \return the host address of the region at \p index (0-3).
    uint8_t* Region(size_t index) const;

    std::vector<uint8_t> m_bytes; //!< guards and regions
};

/**
 * The work requests a side has posted and not yet seen complete. Work requests are numbered:
 * send i and receive i have fixed parameters (PostSendNumber, PostRecvNumber), so both sides
 * of a seed and every replay post the same ones.
 */
class WorkLog
{
  public:
    /// Post send number \p i (the parameters are a function of i). \return the status.
    PostStatus PostSendNumber(Endpoint& ep,
                              Time now,
                              uint32_t qpn,
                              Kind kind,
                              const Arena& arena,
                              uint32_t i);
    /// Post receive number \p i. \return the status.
    PostStatus PostRecvNumber(Endpoint& ep,
                              Time now,
                              uint32_t qpn,
                              Kind kind,
                              const Arena& arena,
                              uint32_t i);
    /// Post the next send. \return the status.
    PostStatus PostNextSend(Endpoint& ep, Time now, uint32_t qpn, Kind kind, const Arena& arena);
    /// Post the next receive. \return the status.
    PostStatus PostNextRecv(Endpoint& ep, Time now, uint32_t qpn, Kind kind, const Arena& arena);
    /**
     * Account for completion \p c: it must be the first completion of a work request this
     * log posted, of the right kind. \return an explanation if it is not, else nullptr.
     */
    const char* Complete(const Completion& c);

    static constexpr uint64_t SEND_ID_BASE = 1000000; //!< wrId of send 0
    static constexpr uint64_t RECV_ID_BASE = 2000000; //!< wrId of receive 0

  private:
    std::vector<bool> m_sendOpen; //!< by send number: posted and not completed
    std::vector<bool> m_recvOpen; //!< by receive number: posted and not completed
    uint32_t m_nextSend{0};       //!< number of the next send
    uint32_t m_nextRecv{0};       //!< number of the next receive
};

/// Sends and receives each side posts before the conversation starts.
constexpr uint32_t INITIAL_SENDS = 6;
constexpr uint32_t INITIAL_RECVS = 8;

/**
 * Set up one side at time 0: create the connection of \p kind and \p mode, connect it to the
 * peer's connection (QPN FIRST_QPN) at \p peerIp, register \p arena and post the initial
 * receives and sends into \p log. \return the local QPN (0 on failure).
 */
uint32_t SetUpSide(Endpoint& ep,
                   Kind kind,
                   uint8_t mode,
                   uint32_t peerIp,
                   Arena& arena,
                   WorkLog& log);

/// Append a record (see the file comment) to \p out.
void AppendRecord(std::vector<uint8_t>& out,
                  uint8_t flags,
                  uint16_t delta,
                  const uint8_t* data,
                  size_t length);

/// What one input did (for the seed generator's sanity check).
struct RunStats
{
    uint64_t records{0};     //!< records executed
    uint64_t datagrams{0};   //!< datagrams handed to HandleDatagram
    uint64_t accepted{0};    //!< of which RxStatus::ACCEPTED
    uint64_t transmitted{0}; //!< datagrams the endpoint produced
    uint64_t completions{0}; //!< completions polled
};

/**
 * Run one fuzz input against a fresh endpoint of \p kind. Aborts (with a message on stderr)
 * when an invariant breaks: a transmitted datagram that does not parse, has a wrong ICRC or
 * is not addressed to the peer; a completion of a work request that was not outstanding; a
 * write into a read-only region; a deadline that HandleTimeout leaves due; a transmit loop
 * that does not end. Memory errors are the sanitizers' to report.
 */
void RunInput(Kind kind, const uint8_t* data, size_t size, RunStats* stats = nullptr);

} // namespace fuzz
} // namespace metaroce

#endif // METAROCE_FUZZ_HARNESS_H
