/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_ETHERNET_H
#define METAROCE_HIL_ETHERNET_H

#include "metaroce-encap.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-log.h"

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

/**
 * \file
 * What the ports that do their own Ethernet/IPv4/UDP encapsulation (AF_PACKET and TAP) do to
 * every frame they receive and every datagram they send, written once.
 */

namespace metaroce
{
namespace hil
{

/**
 * Classify one received Ethernet frame and count it.
 *
 * Frames that are not IPv4/UDP, are fragments, or are addressed to another host or UDP port
 * count as ignored; frames that fail to parse count as malformed and get a rate-limited
 * warning naming \p port. A datagram for this engine counts as received and has its
 * destination port rewritten to 4791 (the engine's view, whatever data port the wire used).
 *
 * \param frame the frame
 * \param len its length
 * \param localIp the engine's address
 * \param dataPort the UDP port the engine's datagrams arrive on
 * \param port the port kind for log lines ("raw port", "tap port")
 * \param now the time, for the rate limiter
 * \param malformedLog the rate limiter of malformed-frame lines
 * \param counters the port's counters
 * \param[out] parsed the datagram, when accepted
 * \return true if \p parsed holds a datagram for this engine
 */
bool AcceptEngineFrame(const uint8_t* frame,
                       size_t len,
                       uint32_t localIp,
                       uint16_t dataPort,
                       const char* port,
                       Time now,
                       RateLimiter& malformedLog,
                       PortCounters& counters,
                       ParsedFrame& parsed);

/**
 * Encapsulate one datagram into \p cap bytes at \p out for an Ethernet port: a frame buffer,
 * or a transmit ring's slot whose datagram the engine wrote at \p out + FRAME_HEADERS_SIZE
 * already (then only the headers are written).
 *
 * A datagram that does not fit the buffer or the MTU counts as a failed send and gets a
 * rate-limited error naming \p device and what to change (\p mtuHint).
 *
 * \param tx the datagram (its destination port is replaced by \p dataPort)
 * \param dataPort the UDP destination port on the wire
 * \param src the source MAC address
 * \param dst the destination MAC address
 * \param mtu the interface MTU (IPv4 packet bytes)
 * \param out where the frame is written
 * \param cap its size, which bounds the frame
 * \param port the port kind for log lines
 * \param device the interface name for log lines
 * \param mtuHint what to raise when a datagram is too large ("the link MTU", "the TAP MTU")
 * \param now the time, for the rate limiter
 * \param errorLog the rate limiter of send-error lines
 * \param counters the port's counters
 * \return the frame length, or 0 if it was not built
 */
size_t EncapsulateForPort(const TxDatagram& tx,
                          uint16_t dataPort,
                          const MacAddress& src,
                          const MacAddress& dst,
                          uint32_t mtu,
                          uint8_t* out,
                          size_t cap,
                          const char* port,
                          const std::string& device,
                          const char* mtuHint,
                          Time now,
                          RateLimiter& errorLog,
                          PortCounters& counters);

/**
 * Count the outcome of writing one frame and say what the caller returns.
 *
 * \param n what write()/sendto() returned (errno still set from it)
 * \param frameLen the frame's length
 * \param datagramLen the datagram's length (counted in txBytes when sent)
 * \param what the start of the error line ("raw port: send on")
 * \param device the interface name
 * \param now the time, for the rate limiter
 * \param errorLog the rate limiter of send-error lines
 * \param counters the port's counters
 * \return SENT, WOULD_BLOCK (the kernel queue is full) or FAILED (counted and logged)
 */
SendStatus CountSendResult(ssize_t n,
                           size_t frameLen,
                           size_t datagramLen,
                           const char* what,
                           const std::string& device,
                           Time now,
                           RateLimiter& errorLog,
                           PortCounters& counters);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_ETHERNET_H
