package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.jobmanager.scheduler.SlotSharingGroup;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;

import java.time.Duration;
import java.util.function.Function;

/**
 * The Flink internals whose signatures differ between lines, behind one API (same class in each overlay). Flink 2.0
 * and later: an execution slot sharing group is made from its slot sharing group (whose resource profile it
 * requests), and the allocator takes its timeout as a {@code Duration}.
 */
final class PlacementCompat {
    private PlacementCompat() {}

    /** An execution slot sharing group that requests {@code pinned}'s resource profile. */
    static ExecutionSlotSharingGroup newExecutionSlotSharingGroup(SlotSharingGroup pinned) {
        return new ExecutionSlotSharingGroup(pinned);
    }

    static ExecutionSlotAllocator newAllocator(
            PhysicalSlotProvider provider,
            boolean slotWillBeOccupiedIndefinitely,
            SlotSharingStrategy strategy,
            SharedSlotProfileRetriever.SharedSlotProfileRetrieverFactory profiles,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Duration allocationTimeout,
            Function<ExecutionVertexID, ResourceProfile> resourceProfiles) {
        return new SlotSharingExecutionSlotAllocator(provider, slotWillBeOccupiedIndefinitely, strategy, profiles,
                bulkChecker, allocationTimeout, resourceProfiles);
    }
}
