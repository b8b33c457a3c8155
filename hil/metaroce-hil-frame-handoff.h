/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_FRAME_HANDOFF_H
#define METAROCE_HIL_FRAME_HANDOFF_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * Frames handed from one engine shard to another. The AF_XDP port of shard i reads the
 * device's receive queue i, and an XSKMAP redirect reaches only the socket of the queue the
 * frame arrived on, so a frame whose destination QPN another shard owns arrives at the wrong
 * shard whenever the sender's queue choice (RSS, XPS) does not follow the QPN. That shard
 * copies it into a bounded single-producer, single-consumer ring towards the owner and wakes
 * the owner through an eventfd; the owner drains its rings in its own poll loop. A full ring
 * drops the frame and counts it; nothing waits. See docs/hil.md, "Several engine threads".
 */

namespace metaroce
{
namespace hil
{

/**
 * A bounded ring of copied frames between one producer thread and one consumer thread.
 * Slots hold up to SlotBytes() bytes each; their number is a power of two.
 */
class FrameHandoffRing
{
  public:
    /**
     * \param slots frames the ring holds (rounded up to a power of two, at least 2)
     * \param slotBytes the largest frame
     */
    FrameHandoffRing(uint32_t slots, uint32_t slotBytes);
    FrameHandoffRing(const FrameHandoffRing&) = delete;
    FrameHandoffRing& operator=(const FrameHandoffRing&) = delete;

    /**
     * Copy a frame in (the producer's thread only).
     * \return false if the ring is full or the frame longer than a slot: it is dropped and
     *         counted (Dropped())
     */
    bool Push(const uint8_t* data, uint32_t length);

    /**
     * Visit up to \p maxFrames frames in the order pushed and free their slots (the consumer's
     * thread only). \p visit(const uint8_t* data, uint32_t length); the bytes are valid during
     * the call only.
     * \return frames visited
     */
    template <typename Visit>
    size_t Drain(size_t maxFrames, Visit&& visit)
    {
        const uint64_t head = m_head.load(std::memory_order_relaxed);
        const uint64_t tail = m_tail.load(std::memory_order_acquire);
        const size_t n = size_t(std::min<uint64_t>(tail - head, maxFrames));
        for (size_t k = 0; k < n; ++k)
        {
            const size_t slot = size_t((head + k) & m_mask);
            visit(m_data.get() + slot * m_slotBytes, m_lengths[slot]);
        }
        m_head.store(head + n, std::memory_order_release);
        return n;
    }

    /// \return frames waiting (either thread; a snapshot).
    uint32_t Size() const
    {
        return uint32_t(m_tail.load(std::memory_order_acquire) -
                        m_head.load(std::memory_order_acquire));
    }

    /// \return the number of slots.
    uint32_t Capacity() const
    {
        return m_mask + 1;
    }

    /// \return the largest frame a slot holds.
    uint32_t SlotBytes() const
    {
        return m_slotBytes;
    }

    /// \return frames pushed so far (any thread).
    uint64_t Pushed() const
    {
        return m_pushed.load(std::memory_order_relaxed);
    }

    /// \return frames dropped so far because the ring was full or the frame too long.
    uint64_t Dropped() const
    {
        return m_dropped.load(std::memory_order_relaxed);
    }

  private:
    uint32_t m_mask;                 //!< slots - 1
    uint32_t m_slotBytes;            //!< bytes per slot
    std::vector<uint32_t> m_lengths; //!< each slot's frame length
    /// The slots (left uninitialised: a large allocation's pages are touched only when used).
    std::unique_ptr<uint8_t[]> m_data;
    std::atomic<uint64_t> m_pushed{};           //!< frames pushed (written by the producer)
    std::atomic<uint64_t> m_dropped{};          //!< frames dropped (written by the producer)
    alignas(64) std::atomic<uint64_t> m_head{}; //!< next slot to read (written by the consumer)
    alignas(64) std::atomic<uint64_t> m_tail{}; //!< next slot to write (written by the producer)
    uint64_t m_headSeen{0}; //!< the producer's last look at m_head (its cache line stays shared)
};

/**
 * The hand-off rings of N shards: one FrameHandoffRing per ordered pair (from, to), and one
 * eventfd per shard that the producers write to wake its poll loop.
 */
class ShardHandoff
{
  public:
    /**
     * \param shards the number of shards (2..64)
     * \param slotBytes the largest frame
     * \param[out] error why it failed (an eventfd)
     * \return the rings, or nullptr
     */
    static std::shared_ptr<ShardHandoff> Create(uint32_t shards,
                                                uint32_t slotBytes,
                                                std::string& error);
    ~ShardHandoff();
    ShardHandoff(const ShardHandoff&) = delete;
    ShardHandoff& operator=(const ShardHandoff&) = delete;

    /// \return the number of shards.
    uint32_t Shards() const
    {
        return m_shards;
    }

    /// \return the ring from shard \p from to shard \p to (from != to).
    FrameHandoffRing& Ring(uint32_t from, uint32_t to)
    {
        return *m_rings[size_t(from) * m_shards + to];
    }

    /// \return the eventfd that wakes shard \p shard (owned by this object).
    int WakeFd(uint32_t shard) const
    {
        return m_wake[shard];
    }

    /// Wake shard \p shard's poll loop (a write to its eventfd).
    void Wake(uint32_t shard) const;

    /**
     * Slots per ring for \p shards shards: as many frames towards each shard in all as an
     * AF_XDP socket's receive ring holds (2,048), at least 16 per ring.
     */
    static uint32_t SlotsPerRing(uint32_t shards);

  private:
    explicit ShardHandoff(uint32_t shards);
    uint32_t m_shards;                                      //!< N
    std::vector<std::unique_ptr<FrameHandoffRing>> m_rings; //!< N x N (the diagonal empty)
    std::vector<int> m_wake;                                //!< one eventfd per shard
};

/**
 * The shard that owns an Ethernet frame's IPv4/UDP datagram: (QPN - FIRST_QPN) mod \p shards
 * of its BTH's destination QPN, as the UDP port's reuseport program computes it.
 * \return false if the frame is too short for the QPN (the receiving shard keeps it and its
 *         engine counts it as malformed)
 */
bool FrameQpnShard(const uint8_t* frame, size_t length, uint32_t shards, uint32_t& shard);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_FRAME_HANDOFF_H
