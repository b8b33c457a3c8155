/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RING_QUEUE_H
#define METAROCE_RING_QUEUE_H

#include <cstddef>
#include <utility>
#include <vector>

namespace metaroce
{

/**
 * A FIFO on a power-of-two ring that only allocates when it grows. Unlike std::deque it
 * holds no memory while it has never been used and never allocates in steady state, which
 * is what the engine's per-packet paths and idle connections need.
 */
template <typename T>
class RingQueue
{
  public:
    /// \return true if empty.
    bool empty() const
    {
        return m_size == 0;
    }

    /// \return the number of elements.
    size_t size() const
    {
        return m_size;
    }

    /// \return the element \p i positions from the front.
    T& operator[](size_t i)
    {
        return m_items[(m_head + i) & (m_items.size() - 1)];
    }

    /// \copydoc operator[](size_t)
    const T& operator[](size_t i) const
    {
        return m_items[(m_head + i) & (m_items.size() - 1)];
    }

    /// \return the oldest element.
    T& front()
    {
        return (*this)[0];
    }

    /// \copydoc front()
    const T& front() const
    {
        return (*this)[0];
    }

    /// \return the newest element.
    T& back()
    {
        return (*this)[m_size - 1];
    }

    /// Append \p v.
    void push_back(T v)
    {
        if (m_size == m_items.size())
        {
            Grow();
        }
        (*this)[m_size++] = std::move(v);
    }

    /// Remove the oldest element.
    void pop_front()
    {
        m_head = (m_head + 1) & (m_items.size() - 1);
        --m_size;
    }

    /// Remove the newest element.
    void pop_back()
    {
        --m_size;
    }

    /// Remove every element (keeps the memory).
    void clear()
    {
        m_head = 0;
        m_size = 0;
    }

    /// \return bytes of heap held.
    size_t CapacityBytes() const
    {
        return m_items.capacity() * sizeof(T);
    }

  private:
    void Grow()
    {
        std::vector<T> items(m_items.empty() ? 4 : m_items.size() * 2);
        for (size_t i = 0; i < m_size; ++i)
        {
            items[i] = std::move((*this)[i]);
        }
        m_items.swap(items);
        m_head = 0;
    }

    std::vector<T> m_items; //!< storage, size a power of two (or empty)
    size_t m_head{0};       //!< index of the front
    size_t m_size{0};       //!< elements held
};

} // namespace metaroce

#endif // METAROCE_RING_QUEUE_H
