package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobmanager.scheduler.SlotSharingGroup;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;
import org.apache.flink.runtime.scheduler.strategy.SchedulingExecutionVertex;
import org.apache.flink.runtime.scheduler.strategy.SchedulingTopology;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Execution slot sharing groups for a placed job: each group holds subtasks bound for one TaskManager only, and its
 * slot request carries one unit of that TaskManager's external resource, so Flink's own slot manager can put it nowhere
 * else. Within a job's logical slot sharing group and a TaskManager, the k-th subtask (by index) of every vertex there
 * shares the k-th slot: a TaskManager needs as many slots as the most subtasks of one vertex it runs (what the planner
 * counts), and a FORWARD pipeline placed together stays in one slot.
 */
final class PlacementSlotSharingStrategy implements SlotSharingStrategy, SchedulingTopologyListener {
    private final Map<ExecutionVertexID, ExecutionSlotSharingGroup> groupOf = new HashMap<>();
    private final Set<ExecutionSlotSharingGroup> groups = new LinkedHashSet<>();
    /** TaskManager -> the requests (without external resource) its groups make. */
    final Map<String, List<ResourceProfile>> requestsOf = new LinkedHashMap<>();

    PlacementSlotSharingStrategy(SchedulingTopology topology, Set<SlotSharingGroup> logicalGroups, PlacementPlan plan) {
        Map<JobVertexID, SlotSharingGroup> logicalOf = new HashMap<>();
        for (SlotSharingGroup g : logicalGroups) {
            for (JobVertexID v : g.getJobVertexIds()) {
                logicalOf.put(v, g);
            }
        }
        // (logical group, TaskManager) -> slots in order; (logical group, TaskManager, vertex) -> subtasks placed so far
        Map<SlotSharingGroup, Map<String, List<ExecutionSlotSharingGroup>>> slots = new LinkedHashMap<>();
        Map<String, Integer> taken = new HashMap<>();
        for (SchedulingExecutionVertex v : topology.getVertices()) { // job vertices in topological order, then index
            ExecutionVertexID id = v.getId();
            String tm = plan.taskManagerOf.get(id);
            SlotSharingGroup logical = logicalOf.get(id.getJobVertexId());
            if (tm == null || logical == null) {
                throw new PlacementSchedulerException("job '" + plan.jobName + "': subtask " + id + " has "
                        + (tm == null ? "no TaskManager" : "no slot sharing group") + " (" + plan.file + ")");
            }
            List<ExecutionSlotSharingGroup> onTm =
                    slots.computeIfAbsent(logical, k -> new LinkedHashMap<>()).computeIfAbsent(tm, k -> new ArrayList<>());
            String key = System.identityHashCode(logical) + "\0" + tm + "\0" + id.getJobVertexId();
            int k = taken.merge(key, 1, Integer::sum) - 1;
            if (k == onTm.size()) {
                onTm.add(newGroup(logical, tm, plan));
            }
            ExecutionSlotSharingGroup group = onTm.get(k);
            group.addVertex(id);
            groupOf.put(id, group);
        }
        for (Map<String, List<ExecutionSlotSharingGroup>> byTm : slots.values()) {
            byTm.forEach((tm, list) -> {
                groups.addAll(list);
                for (ExecutionSlotSharingGroup g : list) {
                    requestsOf.computeIfAbsent(tm, x -> new ArrayList<>())
                            .add(PlacementFiles.withoutExtendedResources(g.getResourceProfile()));
                }
            });
        }
        checkFits(plan);
        topology.registerSchedulingTopologyListener(this);
    }

    private static ExecutionSlotSharingGroup newGroup(SlotSharingGroup logical, String tm, PlacementPlan plan) {
        // unnamed: SlotSharingGroup names exist on Flink 2.3 only, and equals() compares the group's id anyway
        SlotSharingGroup pinned = new SlotSharingGroup();
        for (JobVertexID v : logical.getJobVertexIds()) {
            pinned.addVertexToGroup(v);
        }
        // a group sized by the job itself (fine-grained resources) keeps its size; else one slot of that TaskManager
        ResourceProfile asked = logical.getResourceProfile();
        ResourceProfile base = asked == null || ResourceProfile.UNKNOWN.equals(asked) ? plan.slotOf.get(tm) : asked;
        pinned.setResourceProfile(PlacementFiles.pinned(base, tm));
        return PlacementCompat.newExecutionSlotSharingGroup(pinned);
    }

    /** The slots placed on a TaskManager of the table must fit in it. */
    private void checkFits(PlacementPlan plan) {
        for (Map.Entry<String, List<ResourceProfile>> e : requestsOf.entrySet()) {
            String tm = e.getKey();
            Integer slots = plan.slotsOf.get(tm);
            if (slots == null) {
                continue;
            }
            ResourceProfile total = plan.slotOf.get(tm).multiply(slots);
            ResourceProfile asked = e.getValue().stream().reduce(ResourceProfile.ZERO, ResourceProfile::merge);
            if (e.getValue().size() > slots || !total.allFieldsNoLessThan(asked)) {
                throw new PlacementSchedulerException(plan.file + ": job '" + plan.jobName + "' needs "
                        + e.getValue().size() + " slot(s) on TaskManager '" + tm + "' (" + asked + "), which has "
                        + slots + " (" + total + ")");
            }
        }
    }

    @Override
    public ExecutionSlotSharingGroup getExecutionSlotSharingGroup(ExecutionVertexID executionVertexId) {
        return groupOf.get(executionVertexId);
    }

    @Override
    public Set<ExecutionSlotSharingGroup> getExecutionSlotSharingGroups() {
        return Collections.unmodifiableSet(groups);
    }

    @Override
    public void notifySchedulingTopologyUpdated(SchedulingTopology topology, List<ExecutionVertexID> newVertices) {
        for (ExecutionVertexID id : newVertices) {
            if (!groupOf.containsKey(id)) {
                throw new PlacementSchedulerException("subtask " + id + " appeared after scheduling started: jobs whose"
                        + " graph changes at runtime (adaptive batch) cannot be placed by a schedulercfg");
            }
        }
    }
}
