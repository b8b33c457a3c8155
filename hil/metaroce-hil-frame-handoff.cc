/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-frame-handoff.h"

#include "metaroce-encap.h"
#include "metaroce-endpoint.h"
#include "metaroce-wire.h"

#include <cerrno>
#include <cstring>
#include <sys/eventfd.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{

namespace
{

/// \return the smallest power of two >= \p n (at least 2).
uint32_t
RoundUpPowerOfTwo(uint32_t n)
{
    uint32_t p = 2;
    while (p < n && p < (1u << 30))
    {
        p <<= 1;
    }
    return p;
}

} // namespace

FrameHandoffRing::FrameHandoffRing(uint32_t slots, uint32_t slotBytes)
    : m_mask(RoundUpPowerOfTwo(slots) - 1),
      m_slotBytes(slotBytes),
      m_lengths(size_t(m_mask) + 1),
      m_data(new uint8_t[(size_t(m_mask) + 1) * slotBytes])
{
}

bool
FrameHandoffRing::Push(const uint8_t* data, uint32_t length)
{
    const uint64_t tail = m_tail.load(std::memory_order_relaxed);
    if (length > m_slotBytes)
    {
        m_dropped.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    if (tail - m_headSeen > m_mask)
    {
        // Looks full from the last look: look again (the consumer may have drained).
        m_headSeen = m_head.load(std::memory_order_acquire);
        if (tail - m_headSeen > m_mask)
        {
            m_dropped.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
    }
    const size_t slot = size_t(tail & m_mask);
    std::memcpy(m_data.get() + slot * m_slotBytes, data, length);
    m_lengths[slot] = length;
    m_tail.store(tail + 1, std::memory_order_release);
    m_pushed.fetch_add(1, std::memory_order_relaxed);
    return true;
}

ShardHandoff::ShardHandoff(uint32_t shards)
    : m_shards(shards),
      m_rings(size_t(shards) * shards),
      m_wake(shards, -1)
{
}

ShardHandoff::~ShardHandoff()
{
    for (int fd : m_wake)
    {
        if (fd >= 0)
        {
            close(fd);
        }
    }
}

uint32_t
ShardHandoff::SlotsPerRing(uint32_t shards)
{
    // (A hand-off ring that overflowed long before the socket's own ring would drop bursts
    // the socket takes: 512 frames per ring with 2 shards dropped 2-3% of RoCEv2's frames.)
    return RoundUpPowerOfTwo(std::max<uint32_t>(16, 2048 / std::max<uint32_t>(shards - 1, 1)));
}

std::shared_ptr<ShardHandoff>
ShardHandoff::Create(uint32_t shards, uint32_t slotBytes, std::string& error)
{
    if (shards < 2 || shards > 64)
    {
        error = "frame hand-off between " + std::to_string(shards) + " shards (2 to 64)";
        return nullptr;
    }
    std::shared_ptr<ShardHandoff> h(new ShardHandoff(shards));
    for (uint32_t i = 0; i < shards; ++i)
    {
        h->m_wake[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (h->m_wake[i] < 0)
        {
            error = std::string("eventfd for the frame hand-off: ") + std::strerror(errno);
            return nullptr;
        }
        for (uint32_t j = 0; j < shards; ++j)
        {
            if (i != j)
            {
                h->m_rings[size_t(i) * shards + j] =
                    std::make_unique<FrameHandoffRing>(SlotsPerRing(shards), slotBytes);
            }
        }
    }
    return h;
}

void
ShardHandoff::Wake(uint32_t shard) const
{
    const uint64_t one = 1;
    // EAGAIN (the counter is at its maximum) still leaves the eventfd readable.
    [[maybe_unused]] ssize_t n = write(m_wake[shard], &one, sizeof(one));
}

bool
FrameQpnShard(const uint8_t* frame, size_t length, uint32_t shards, uint32_t& shard)
{
    if (length < ETHERNET_HEADER_SIZE + IPV4_HEADER_SIZE)
    {
        return false;
    }
    const size_t ihl = size_t(frame[ETHERNET_HEADER_SIZE] & 0x0f) * 4;
    const size_t qpn = ETHERNET_HEADER_SIZE + ihl + UDP_HEADER_SIZE + Bth::DEST_QP;
    if (ihl < IPV4_HEADER_SIZE || length < qpn + 3)
    {
        return false;
    }
    const uint32_t value =
        uint32_t(frame[qpn]) << 16 | uint32_t(frame[qpn + 1]) << 8 | uint32_t(frame[qpn + 2]);
    shard = (value - FIRST_QPN) % shards; // (unsigned, as the kernel's BPF computes it)
    return true;
}

} // namespace hil
} // namespace metaroce
