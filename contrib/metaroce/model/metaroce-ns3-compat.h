/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_NS3_COMPAT_H
#define METAROCE_NS3_COMPAT_H

#include "ns3/attribute-accessor-helper.h"
#include "ns3/enum.h"
#include "ns3/event-id.h"

#include <type_traits>
#include <utility>

/**
 * \file
 * The few ns-3 APIs that differ between the releases the module builds with (Debian's ns-3.37
 * and current ns-3-dev; docs/building.md).
 *
 * Each difference is resolved at compile time from the API itself, not from a version number:
 * ns-3's version macros (ns3/version-defines.h) exist only in builds configured with
 * NS3_ENABLE_BUILD_VERSION from a git checkout with tags (and in Debian's package), so a
 * source tree a user unpacks or a default `./ns3 configure` has none.
 */

namespace ns3
{

/**
 * The attribute value class that holds an enum of type \p T: the class ns3::EnumValue up to
 * ns-3.40, the class template ns3::EnumValue<T> from ns-3.41. Class template argument deduction
 * names the right one in both: with the class, EnumValue(T) is a conversion through int.
 */
template <typename T>
using MetaRoceEnumValueOf = decltype(EnumValue(std::declval<T>()));

namespace metaroce_compat
{
/// ns-3.41 and later: the class template EnumChecker<T> (chosen when C is a template).
template <typename T, template <typename> class C>
C<T>* EnumCheckerOf(int);

/// Up to ns-3.40: the class EnumChecker (chosen when C is a class).
template <typename T, class C>
C* EnumCheckerOf(long);
} // namespace metaroce_compat

/**
 * The attribute checker class of an enum of type \p T: the class ns3::EnumChecker up to
 * ns-3.40, the class template ns3::EnumChecker<T> from ns-3.41. An explicit template argument
 * of the wrong kind (a template for a class parameter, or the reverse) removes that overload
 * of EnumCheckerOf, so exactly one is left in both.
 */
template <typename T>
using MetaRoceEnumCheckerOf =
    std::remove_pointer_t<decltype(metaroce_compat::EnumCheckerOf<T, EnumChecker>(0))>;

/**
 * MakeEnumAccessor for a data member or a getter or setter of enum type \p T. ns-3.41 and
 * later need T as an explicit template argument, which ns-3.40 and earlier do not accept.
 *
 * \tparam T The enum type.
 * \param [in] accessor The data member, getter or setter.
 * \returns The AttributeAccessor.
 */
template <typename T, typename A>
Ptr<const AttributeAccessor>
MetaRoceMakeEnumAccessor(A accessor)
{
    return MakeAccessorHelper<MetaRoceEnumValueOf<T>>(accessor);
}

/**
 * MakeEnumAccessor for a setter and a getter of enum type \p T (in either order).
 *
 * \tparam T The enum type.
 * \param [in] first The setter or getter.
 * \param [in] second The getter or setter.
 * \returns The AttributeAccessor.
 */
template <typename T, typename A1, typename A2>
Ptr<const AttributeAccessor>
MetaRoceMakeEnumAccessor(A1 first, A2 second)
{
    return MakeAccessorHelper<MetaRoceEnumValueOf<T>>(first, second);
}

namespace metaroce_compat
{
/// EventId::IsPending(), from ns-3.42 (preferred when it exists: the int overload wins).
template <typename E>
auto
IsPending(const E& event, int) -> decltype(event.IsPending())
{
    return event.IsPending();
}

/// EventId::IsRunning(), up to ns-3.41 (removed later). Never instantiated when IsPending exists.
template <typename E>
bool
IsPending(const E& event, long)
{
    return event.IsRunning();
}
} // namespace metaroce_compat

/**
 * Whether \p event is scheduled and has neither run nor been cancelled: EventId::IsRunning()
 * up to ns-3.41, EventId::IsPending() from ns-3.42.
 *
 * \param [in] event The event.
 * \returns true if the event is pending.
 */
inline bool
MetaRoceIsPending(const EventId& event)
{
    return metaroce_compat::IsPending(event, 0);
}

} // namespace ns3

#endif // METAROCE_NS3_COMPAT_H
