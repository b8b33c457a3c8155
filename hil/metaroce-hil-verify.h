/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_VERIFY_H
#define METAROCE_HIL_VERIFY_H

#include "metaroce-config.h"
#include "metaroce-hil.pb.h"
#include "metaroce-verbs.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * What a metaroce-perf receiver checks, shared by the real server
 * (metaroce-hil-perf-session.cc) and the simulated hosts of metaroce-hil-fabric
 * (metaroce-hil-sim-host.cc): the seeded data pattern, the work-request id layout, the limits on
 * a client's workload, the server's check of a Hello and its Accept, and the check of one
 * received message. Pure C++ over the engine types and the control-plane schema: no I/O.
 */

namespace metaroce
{
namespace hil
{

/// Software name sent in Hello / Accept.
constexpr const char* PERF_SOFTWARE = "metaroce-perf 0.1.0";
/// Message offsets into the pattern buffer are drawn from this window.
constexpr uint64_t PATTERN_WINDOW = 65536;
/// Largest buffer a session registers.
constexpr uint64_t MAX_REGION_BYTES = 1ull << 30;
/// Work-request id layout: stream index above, message number (or slot) below.
constexpr unsigned WR_SEQ_BITS = 40;
/// Mask of the message number in a work-request id.
constexpr uint64_t WR_SEQ_MASK = (1ull << WR_SEQ_BITS) - 1;
/// Paths reserved per connection in the source-port plan.
constexpr uint32_t PORTS_PER_CONNECTION = 64;
/// Most connections a client may ask for.
constexpr uint32_t MAX_PERF_CONNECTIONS = 64;

/**
 * The seeded content of every message: message (connection, stream, number) is the window of
 * `size` bytes at a pseudo-random offset of one random buffer, so a message that lands in the
 * wrong slot, a stale slot or a corrupted byte all show up as differences.
 */
class DataPattern
{
  public:
    /**
     * \param seed the workload's pattern seed
     * \param size message size, bytes
     */
    DataPattern(uint64_t seed, uint64_t size);

    /// \return the first of the `size` bytes of message \p seq of stream \p stream of \p conn.
    const uint8_t* Message(uint32_t conn, uint32_t stream, uint64_t seq) const;

    /// \return the random bytes every message is a window of (Size() of them).
    const uint8_t* Data() const
    {
        return m_bytes.data();
    }

    /// \return how many bytes Data() holds.
    size_t Size() const
    {
        return m_bytes.size();
    }

  private:
    uint64_t m_seed;              //!< seed
    std::vector<uint8_t> m_bytes; //!< random bytes
};

/**
 * Check a client's Hello workload against the receiver's connection settings.
 * \return "" if the receiver can serve it, else why not (one line)
 */
std::string CheckWorkload(const proto::Hello& hello, const ConnectionConfig& cfg);

/**
 * \return the bytes of the receive buffer of \p w: one slot of message_size per stream and
 *         depth (0 if the product overflows)
 */
uint64_t RegionBytes(const proto::Workload& w);

/**
 * How a server turns the connection settings of a client's Hello into those of the session.
 * \param client the Hello's settings
 * \param[in,out] cfg the server's settings, adjusted for the session
 * \return "" if the server can use them, else the reason for the Reject (one line)
 */
using SettingsRule =
    std::function<std::string(const proto::ConnectionSettings& client, ConnectionConfig& cfg)>;

/**
 * The server's check of a client's Hello, one for every server: metaroce-perf's (and so
 * metaroce-hild's) and the simulated hosts of metaroce-hil-fabric. In this order:
 *  1. the protocol version (VERSION_CURRENT only);
 *  2. the connection settings, by \p settle (metaroce-perf: they must equal its own; a
 *     simulated host adopts them within its port's limits);
 *  3. the workload against the settled \p cfg (CheckWorkload()) and its receive buffer
 *     (RegionBytes()) against MAX_REGION_BYTES.
 * The control plane's own limits (message length, silence timeout) are ControlChannel's.
 * \param hello the client's Hello
 * \param settle the server's rule for the settings
 * \param[in,out] cfg the server's settings; on success those of the session
 * \return "" to accept the session, else the reason for the Reject (one line)
 */
std::string CheckHello(const proto::Hello& hello,
                       const SettingsRule& settle,
                       ConnectionConfig& cfg);

/**
 * List a side's connections as a Hello or an Accept carries them: connection i is queue pair
 * \p qpns[i] and sends from UDP source port \p sourcePortBase + i * PORTS_PER_CONNECTION on.
 */
void AddQueuePairs(const std::vector<uint32_t>& qpns,
                   uint32_t sourcePortBase,
                   google::protobuf::RepeatedPtrField<proto::QueuePair>& out);

/**
 * The Accept of a session, built the same way by every server (the counterpart of
 * CheckHello()): the current protocol version, the server's software name and data address,
 * its connections and, for a WRITE test, the receive region the client writes into.
 * \param software the server's software name
 * \param address where the server receives datagrams
 * \param qpns its connections, in the order of the Hello's
 * \param sourcePortBase the UDP source port of path 0 of connection 0 (AddQueuePairs())
 * \param region the receive region (nullptr: a SEND test, no region)
 * \return the message
 */
proto::ControlMessage AcceptMessage(const std::string& software,
                                    const proto::DataAddress& address,
                                    const std::vector<uint32_t>& qpns,
                                    uint32_t sourcePortBase,
                                    const MemoryRegion* region);

/// Where a received message belongs, for CheckReceived().
struct ReceivedMessage
{
    bool write{true};             //!< op is write (else send)
    uint64_t size{0};             //!< message size
    uint64_t seq{0};              //!< the message number expected next on its stream
    uint64_t slot{0};             //!< its buffer slot (seq % depth)
    const uint8_t* got{nullptr};  //!< the slot's bytes
    const uint8_t* want{nullptr}; //!< the pattern's bytes
};

/**
 * Check one receive completion of a perf test: opcode, immediate (write) or length and slot
 * (send), and every byte.
 * \param c the completion (status SUCCESS)
 * \param m the message it should be
 * \return "" if it is right, else what is wrong (without the location prefix)
 */
std::string CheckReceived(const Completion& c, const ReceivedMessage& m);

/**
 * The engine-access interface of the two servers' receiving half: what VerifyingReceiver
 * needs of the engine it runs on. metaroce-perf's server implements it over its EngineHost's
 * Endpoint; a simulated host of metaroce-hil-fabric over its MetaRoceNic (in the simulator
 * thread).
 */
class ReceiveEngine
{
  public:
    virtual ~ReceiveEngine() = default;
    /// Post receive \p wr on connection \p qpn.
    virtual PostStatus PostRecv(uint32_t qpn, const RecvWr& wr) = 0;
};

/**
 * The engine-access interface of the two servers: what setting up the server's side of a
 * session (SetUpServerSide()) and receiving (VerifyingReceiver) need of the engine.
 * metaroce-perf's ServerSession implements it over its EngineHost; a simulated host over its
 * MetaRoceNic, in the simulator thread.
 */
class ServerEngine : public ReceiveEngine
{
  public:
    /// Create a connection with settings \p cfg whose completions reach the session.
    virtual PostStatus CreateConnection(const ConnectionConfig& cfg,
                                        uint32_t& qpn,
                                        std::string* why) = 0;
    /// Connect local connection \p qpn to the peer's \p peerQpn at \p peerIp.
    virtual PostStatus Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn) = 0;
    /// Register \p length bytes at \p base with \p access. \return lkey 0 on failure
    virtual MemoryRegion RegisterMemory(uint8_t* base, uint64_t length, uint32_t access) = 0;
};

/**
 * The receiving half of a server session, written once for metaroce-perf's (and so
 * metaroce-hild's) server and the simulated hosts: it keeps \p depth receives posted per
 * stream, checks every received message (CheckReceived()) against the client's pattern,
 * takes the sender's counts from Finish, and builds the Verdict. The control plane around it
 * is each server's own (one thread in metaroce-perf; the Asio and simulator threads of a
 * simulated host).
 */
class VerifyingReceiver
{
  public:
    /// Where the session's messages go.
    struct Layout
    {
        bool write{true};                 //!< op is write (else send)
        uint64_t size{0};                 //!< message size
        uint32_t depth{0};                //!< slots per stream
        uint32_t streamsPerConnection{1}; //!< streams of each connection
        std::vector<uint32_t> qpns;       //!< the connections, in the Hello's order
        uint8_t* buffer{nullptr};         //!< registered buffer: stream-major, then slot
        uint32_t lkey{0};                 //!< its key
        uint64_t patternSeed{0};          //!< the client's pattern seed
    };

    /// Called with each problem found, in order (the caller logs the first).
    using ErrorHandler = std::function<void(const std::string& what)>;

    VerifyingReceiver(ReceiveEngine& engine, Layout layout, ErrorHandler onError);

    /// Post every slot of every stream.
    void PostAll();
    /**
     * A successful receive completion \p c: check it, count it and post its slot again.
     * \return false if \p c is not of this session's connections (nothing done)
     */
    bool OnCompletion(const Completion& c);
    /// The sender's Finish with its counts per stream.
    void OnFinish(const std::vector<uint64_t>& expected);
    /// The sender's Finish message.
    void OnFinish(const proto::Finish& finish);
    /// The wait for stragglers after Finish (the control timeout) ended before Complete().
    void StragglersTimedOut();
    /// \return true once Finish arrived and every stream received what the sender completed.
    bool Complete() const;
    /// \return the Verdict: the counts checked against Finish, every error found.
    proto::Verdict MakeVerdict();
    /// Record a problem found outside the receiver (a failed connection).
    void Error(const std::string& what);

    bool FinishReceived() const
    {
        return m_finishReceived;
    }

    uint64_t Messages() const
    {
        return m_messages;
    }

    uint64_t Bytes() const
    {
        return m_bytes;
    }

    uint64_t Errors() const
    {
        return m_errors;
    }

    const std::string& FirstError() const
    {
        return m_firstError;
    }

    /// \return the buffer slot of message slot \p slot of stream \p stream.
    uint8_t* Slot(size_t stream, uint64_t slot) const
    {
        return m_layout.buffer + (stream * m_layout.depth + slot) * m_layout.size;
    }

  private:
    void PostRecv(size_t stream, uint64_t slot);

    ReceiveEngine& m_engine;           //!< where receives are posted
    Layout m_layout;                   //!< the session's shape
    ErrorHandler m_onError;            //!< problem reports
    DataPattern m_pattern;             //!< the client's messages
    std::vector<uint64_t> m_completed; //!< messages received, by stream
    std::vector<uint64_t> m_expected;  //!< from Finish
    bool m_finishReceived{false};      //!< Finish arrived
    uint64_t m_messages{0};            //!< messages received
    uint64_t m_bytes{0};               //!< their bytes
    uint64_t m_errors{0};              //!< problems found
    std::string m_firstError;          //!< the first of them
};

/// What SetUpServerSide() made (the caller destroys it when the session ends, also after a
/// failed set-up).
struct ServerSide
{
    std::vector<uint32_t> qpns;                  //!< connections, in the Hello's order
    MemoryRegion mr;                             //!< the receive region's registration
    std::unique_ptr<VerifyingReceiver> receiver; //!< receiving, every receive posted
};

/**
 * Set up the server's side of a session whose Hello passed CheckHello(), the same way for
 * every server: connection i with \p cfg and UDP source ports from \p sourcePortBase + i x
 * PORTS_PER_CONNECTION, connected to the Hello's queue pair i; the receive region \p buffer
 * (zeroed, RegionBytes() long) registered, writable by the peer for a WRITE test; a
 * VerifyingReceiver with every receive posted.
 * \param onError the receiver's problem reports
 * \param[out] side what was made (also on failure, for the caller to destroy)
 * \return "" or why the session cannot be set up (for the Reject)
 */
std::string SetUpServerSide(ServerEngine& engine,
                            const proto::Hello& hello,
                            const ConnectionConfig& cfg,
                            uint32_t sourcePortBase,
                            std::vector<uint8_t>& buffer,
                            VerifyingReceiver::ErrorHandler onError,
                            ServerSide& side);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_VERIFY_H
