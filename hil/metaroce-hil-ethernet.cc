/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-ethernet.h"

#include <cerrno>
#include <cstring>
#include <spdlog/spdlog.h>

namespace metaroce
{
namespace hil
{

bool
AcceptEngineFrame(const uint8_t* frame,
                  size_t len,
                  uint32_t localIp,
                  uint16_t dataPort,
                  const char* port,
                  Time now,
                  RateLimiter& malformedLog,
                  PortCounters& counters,
                  ParsedFrame& parsed)
{
    const FrameStatus st = ParseFrame(frame, len, parsed);
    if (st == FrameStatus::NOT_IPV4 || st == FrameStatus::NOT_UDP || st == FrameStatus::FRAGMENTED)
    {
        ++counters.rxIgnored; // well formed, just not RoCE traffic (ARP, IPv6 ND, ICMP, ...)
        return false;
    }
    if (st != FrameStatus::OK)
    {
        ++counters.rxMalformed;
        uint64_t suppressed = 0;
        if (malformedLog.Allow(now, suppressed))
        {
            spdlog::warn("{}: dropped a malformed {}-byte frame: {} ({} more suppressed)",
                         port,
                         len,
                         FrameStatusName(st),
                         suppressed);
        }
        return false;
    }
    if (parsed.meta.dstIp != localIp || parsed.meta.dstPort != dataPort)
    {
        ++counters.rxIgnored;
        return false;
    }
    parsed.meta.dstPort = ROCE_UDP_PORT;
    ++counters.rxFrames;
    counters.rxBytes += parsed.datagramLen;
    return true;
}

size_t
EncapsulateForPort(const TxDatagram& tx,
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
                   PortCounters& counters)
{
    DatagramMeta meta = tx.meta;
    meta.dstPort = dataPort;
    const size_t len = EncapsulateFrame(out, cap, src, dst, meta, tx.buffer, tx.length);
    if (len == 0 || len - ETHERNET_HEADER_SIZE > mtu)
    {
        ++counters.txFailed;
        uint64_t suppressed = 0;
        if (errorLog.Allow(now, suppressed))
        {
            spdlog::error("{}: a {}-byte datagram does not fit the MTU {} of {}; lower --mtu or "
                          "raise {} ({} more suppressed)",
                          port,
                          tx.length,
                          mtu,
                          device,
                          mtuHint,
                          suppressed);
        }
        return 0;
    }
    return len;
}

SendStatus
CountSendResult(ssize_t n,
                size_t frameLen,
                size_t datagramLen,
                const char* what,
                const std::string& device,
                Time now,
                RateLimiter& errorLog,
                PortCounters& counters)
{
    if (n == ssize_t(frameLen))
    {
        ++counters.txFrames;
        counters.txBytes += datagramLen;
        return SendStatus::SENT;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
    {
        return SendStatus::WOULD_BLOCK;
    }
    const int err = n < 0 ? errno : EMSGSIZE; // a short write: the frame is lost
    ++counters.txFailed;
    uint64_t suppressed = 0;
    if (errorLog.Allow(now, suppressed))
    {
        spdlog::error("{} {}: {} ({} more suppressed)",
                      what,
                      device,
                      std::strerror(err),
                      suppressed);
    }
    return SendStatus::FAILED;
}

} // namespace hil
} // namespace metaroce
