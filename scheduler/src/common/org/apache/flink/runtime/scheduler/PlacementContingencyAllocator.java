package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The slot allocator of a job whose schedulercfg has contingency sections: before each allocation (the first
 * scheduling and every restart) it asks which of the plan's TaskManagers are lost now ({@link PlacementLiveness}) and
 * binds the subtasks being allocated to that layout ({@link PlacementSlotSharingStrategy#use}); Flink's own allocator
 * does the rest. Runs in the JobManager's main thread, as the allocator it wraps does.
 */
final class PlacementContingencyAllocator implements ExecutionSlotAllocator {
    private final ExecutionSlotAllocator delegate;
    private final PlacementSlotSharingStrategy strategy;

    PlacementContingencyAllocator(ExecutionSlotAllocator delegate, PlacementSlotSharingStrategy strategy) {
        this.delegate = delegate;
        this.strategy = strategy;
    }

    @Override
    public Map<ExecutionAttemptID, ExecutionSlotAssignment> allocateSlotsFor(List<ExecutionAttemptID> executionAttemptIds) {
        List<ExecutionVertexID> vertices = new ArrayList<>(executionAttemptIds.size());
        for (ExecutionAttemptID id : executionAttemptIds) {
            vertices.add(id.getExecutionVertexId());
        }
        strategy.use(PlacementLiveness.lostAmong(strategy.plan.planTaskManagers()), vertices);
        return delegate.allocateSlotsFor(executionAttemptIds);
    }

    @Override
    public void cancel(ExecutionAttemptID executionAttemptId) {
        delegate.cancel(executionAttemptId);
    }
}
