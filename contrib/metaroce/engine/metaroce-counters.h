/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_COUNTERS_H
#define METAROCE_COUNTERS_H

#include <array>
#include <cstddef>
#include <cstdint>

/**
 * \file
 * Engine counters: one enum, one name table. Adapters turn them into ns-3 trace values,
 * log lines and result records; tests assert on them.
 */

namespace metaroce
{

/// Everything the engine counts.
enum class Counter : uint8_t
{
    TX_DATA,               //!< data packets sent for the first time
    TX_RETRANSMIT,         //!< data packets sent again
    TX_ACK,                //!< ACKs sent
    TX_NAK,                //!< NAKs sent
    TX_PROBE,              //!< path probes sent
    TX_CNP,                //!< RoCEv2 CNPs sent
    RX_DATA,               //!< data packets accepted and placed
    RX_DUPLICATE,          //!< duplicate data packets (dropped and acknowledged)
    RX_ACK,                //!< ACKs processed
    RX_NAK,                //!< NAKs processed
    RX_PROBE,              //!< probes answered
    RX_CNP,                //!< CNPs processed
    RX_MALFORMED,          //!< datagrams that failed to parse
    RX_BAD_ICRC,           //!< datagrams with a wrong ICRC
    RX_UNKNOWN_CONNECTION, //!< destination QP not found
    RX_WRONG_SOURCE,       //!< source address does not match the connection's peer
    RX_WRONG_TRANSPORT,    //!< opcode of the other transport
    RX_INVALID,            //!< well-formed but inconsistent (bad path, offset, length)
    RX_OUT_OF_WINDOW,      //!< PSN beyond the SACK window
    RX_STALE_EPOCH,        //!< packet or ACK of a retired path epoch
    RX_ACCESS_ERROR,       //!< WRITE rejected: key, bounds or permission
    RX_RNR,                //!< SEND with no receive posted yet
    RX_RESOURCE_DROP,      //!< dropped: receiver message table full
    RX_OUT_OF_SEQUENCE,    //!< RoCEv2: PSN not the expected one
    LOSS_DETECTED,         //!< packets declared lost from a SACK gap / NAK
    RTO,                   //!< retransmission timeouts
    PATH_FAILED,           //!< paths declared failed
    PATH_RECOVERED,        //!< failed paths probed back in
    ECN_CE_RECEIVED,       //!< CE-marked data packets received
    ECN_ECHO_RECEIVED,     //!< ACKs echoing ECN received
    WINDOW_DECREASE,       //!< window / rate decreases
    BYTES_PLACED,          //!< payload bytes written to final memory (first copy only)
    MESSAGES_SENT,         //!< send work requests completed successfully
    MESSAGES_RECEIVED,     //!< messages fully received
    GO_BACK_N,             //!< RoCEv2: go-back-N rounds started (sequence NAK or timeout)
    TAIL_PROBE,            //!< tail-loss probes sent (a resend of the newest packet)
    PATH_SUSPECT,          //!< paths taken out on evidence from the other paths
    CONFIRM_PROBE,         //!< probes that confirm suspected losses ("rack-confirm")
    COUNT                  //!< number of counters
};

/// \return the stable snake-case name of \p c (used in logs and result files).
const char* CounterName(Counter c);

/// A fixed array of counters.
class CounterSet
{
  public:
    /// Add \p n to \p c.
    void Add(Counter c, uint64_t n = 1)
    {
        m_values[size_t(c)] += n;
    }

    /// \return the value of \p c.
    uint64_t Get(Counter c) const
    {
        return m_values[size_t(c)];
    }

  private:
    std::array<uint64_t, size_t(Counter::COUNT)> m_values{}; //!< values
};

} // namespace metaroce

#endif // METAROCE_COUNTERS_H
