package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobmanager.scheduler.SlotSharingGroup;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;
import org.apache.flink.runtime.scheduler.strategy.SchedulingExecutionVertex;
import org.apache.flink.runtime.scheduler.strategy.SchedulingTopology;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Execution slot sharing groups for a placed job: each group holds subtasks bound for one TaskManager only, and its
 * slot request carries one unit of that TaskManager's external resource, so Flink's own slot manager can put it nowhere
 * else. Within a job's logical slot sharing group and a TaskManager, the k-th subtask (by index) of every vertex there
 * shares the k-th slot: a TaskManager needs as many slots as the most subtasks of one vertex it runs (what the planner
 * counts), and a FORWARD pipeline placed together stays in one slot.
 *
 * <p>A file with contingency sections ({@code [lost <tm>]}) gives the job more than one layout: the plan's, and one per
 * section (the plan with that section's moves), each with groups of its own, built when the job is created. Before
 * each allocation {@link PlacementContingencyAllocator} calls {@link #use} with the TaskManagers missing then; each
 * subtask stays bound to the group of the layout it was last allocated with, so a cancel finds the request it made.
 */
final class PlacementSlotSharingStrategy implements SlotSharingStrategy, SchedulingTopologyListener {
    private static final Logger LOG = LoggerFactory.getLogger(SlotSharingExecutionSlotAllocatorFactory.class);

    /** One layout of the job: which TaskManager each subtask uses, and the slot sharing groups that bind it there. */
    static final class Layout {
        final String key; // the lost TaskManagers whose sections it applies, in file order ("" for the plan)
        final Map<ExecutionVertexID, String> taskManagerOf;
        final Map<ExecutionVertexID, ExecutionSlotSharingGroup> groupOf = new HashMap<>();
        final Set<ExecutionSlotSharingGroup> groups = new LinkedHashSet<>();
        /** TaskManager -> the requests (without external resource) its groups make. */
        final Map<String, List<ResourceProfile>> requestsOf = new LinkedHashMap<>();
        int moved; // subtasks on another TaskManager than the plan's

        Layout(String key, Map<ExecutionVertexID, String> taskManagerOf) {
            this.key = key;
            this.taskManagerOf = taskManagerOf;
        }
    }

    final PlacementPlan plan;
    private final SchedulingTopology topology;
    private final Map<JobVertexID, SlotSharingGroup> logicalOf = new HashMap<>();
    final Layout planLayout;
    /** Every layout built so far by key: the plan's and each section's up front, combinations when first needed. */
    private final Map<String, Layout> layouts = new HashMap<>();
    /** The group each subtask was last allocated with (the allocator also asks for it to cancel that request). */
    private final Map<ExecutionVertexID, ExecutionSlotSharingGroup> bound = new HashMap<>();
    private Layout current;
    private String waitingReported = "";
    /** TaskManager -> the requests the plan's groups make (the log line). */
    final Map<String, List<ResourceProfile>> requestsOf;

    PlacementSlotSharingStrategy(SchedulingTopology topology, Set<SlotSharingGroup> logicalGroups, PlacementPlan plan) {
        this.plan = plan;
        this.topology = topology;
        for (SlotSharingGroup g : logicalGroups) {
            for (JobVertexID v : g.getJobVertexIds()) {
                logicalOf.put(v, g);
            }
        }
        planLayout = build("", plan.taskManagerOf);
        checkFits(planLayout, true);
        requestsOf = planLayout.requestsOf;
        layouts.put("", planLayout);
        for (PlacementPlan.Contingency c : plan.contingencies) {
            layouts.put(c.lost, contingency(c.lost, Collections.singletonList(c)));
        }
        bound.putAll(planLayout.groupOf);
        current = planLayout;
        topology.registerSchedulingTopologyListener(this);
    }

    /** The plan with the moves of {@code applied} (in file order), its fit checked with a WARN only. */
    private Layout contingency(String key, List<PlacementPlan.Contingency> applied) {
        Map<ExecutionVertexID, String> tmOf = new LinkedHashMap<>(plan.taskManagerOf);
        for (PlacementPlan.Contingency c : applied) {
            tmOf.putAll(c.moves);
        }
        Layout layout = build(key, tmOf);
        checkFits(layout, false);
        return layout;
    }

    private Layout build(String key, Map<ExecutionVertexID, String> taskManagerOf) {
        Layout layout = new Layout(key, taskManagerOf);
        // (logical group, TaskManager) -> slots in order; (logical group, TaskManager, vertex) -> subtasks placed so far
        Map<SlotSharingGroup, Map<String, List<ExecutionSlotSharingGroup>>> slots = new LinkedHashMap<>();
        Map<String, Integer> taken = new HashMap<>();
        for (SchedulingExecutionVertex v : topology.getVertices()) { // job vertices in topological order, then index
            ExecutionVertexID id = v.getId();
            String tm = taskManagerOf.get(id);
            SlotSharingGroup logical = logicalOf.get(id.getJobVertexId());
            if (tm == null || logical == null) {
                throw new PlacementSchedulerException("job '" + plan.jobName + "': subtask " + id + " has "
                        + (tm == null ? "no TaskManager" : "no slot sharing group") + " (" + plan.file + ")");
            }
            if (!tm.equals(plan.taskManagerOf.get(id))) {
                layout.moved++;
            }
            List<ExecutionSlotSharingGroup> onTm =
                    slots.computeIfAbsent(logical, k -> new LinkedHashMap<>()).computeIfAbsent(tm, k -> new ArrayList<>());
            String slotKey = System.identityHashCode(logical) + "\0" + tm + "\0" + id.getJobVertexId();
            int k = taken.merge(slotKey, 1, Integer::sum) - 1;
            if (k == onTm.size()) {
                onTm.add(newGroup(logical, tm, plan));
            }
            ExecutionSlotSharingGroup group = onTm.get(k);
            group.addVertex(id);
            layout.groupOf.put(id, group);
        }
        for (Map<String, List<ExecutionSlotSharingGroup>> byTm : slots.values()) {
            byTm.forEach((tm, list) -> {
                layout.groups.addAll(list);
                for (ExecutionSlotSharingGroup g : list) {
                    layout.requestsOf.computeIfAbsent(tm, x -> new ArrayList<>())
                            .add(PlacementFiles.withoutExtendedResources(g.getResourceProfile()));
                }
            });
        }
        return layout;
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

    /** The slots a layout places on a TaskManager of the table must fit in it: the plan's or an error, else a WARN. */
    private void checkFits(Layout layout, boolean isPlan) {
        for (Map.Entry<String, List<ResourceProfile>> e : layout.requestsOf.entrySet()) {
            String tm = e.getKey();
            Integer slots = plan.slotsOf.get(tm);
            if (slots == null) {
                continue;
            }
            ResourceProfile total = plan.slotOf.get(tm).multiply(slots);
            ResourceProfile asked = e.getValue().stream().reduce(ResourceProfile.ZERO, ResourceProfile::merge);
            if (e.getValue().size() > slots || !total.allFieldsNoLessThan(asked)) {
                String needs = "job '" + plan.jobName + "' needs " + e.getValue().size() + " slot(s) on TaskManager '"
                        + tm + "' (" + asked + "), which has " + slots + " (" + total + ")";
                if (isPlan) {
                    throw new PlacementSchedulerException(plan.file + ": " + needs);
                }
                LOG.warn("placement: {}: while {} {} lost (its contingency), {}: the job waits for room there",
                        plan.file, String.join(", ", layout.key.split(",")),
                        layout.key.contains(",") ? "are" : "is", needs);
            }
        }
    }

    /**
     * Binds {@code vertices} (about to be allocated) to the layout for the TaskManagers missing now: the plan if none
     * is, else the plan with the sections of the missing ones applied in file order. Logs a change of layout (INFO)
     * and subtasks left on a missing TaskManager (WARN).
     */
    void use(Set<String> missing, Collection<ExecutionVertexID> vertices) {
        List<PlacementPlan.Contingency> applied = new ArrayList<>();
        for (PlacementPlan.Contingency c : plan.contingencies) {
            if (missing.contains(c.lost)) {
                applied.add(c);
            }
        }
        String key = applied.stream().map(c -> c.lost).collect(Collectors.joining(","));
        Layout layout = layouts.computeIfAbsent(key, k -> contingency(k, applied));
        if (layout != current) {
            if (layout == planLayout) {
                LOG.info("placement: job '{}': the TaskManagers of its plan are back: placed by the plan ({})",
                        plan.jobName, plan.file);
            } else {
                LOG.info("placement: job '{}': TaskManager{} {} lost: placed by {} contingenc{} ({} subtasks moved; {})",
                        plan.jobName, applied.size() > 1 ? "s" : "", String.join(", ", key.split(",")),
                        applied.size() > 1 ? "their" : "its", applied.size() > 1 ? "ies" : "y", layout.moved,
                        applied.stream().map(c -> c.where).collect(Collectors.joining(", ")));
            }
            current = layout;
        }
        Map<String, List<String>> waiting = new TreeMap<>();
        layout.taskManagerOf.forEach((id, tm) -> {
            if (missing.contains(tm)) {
                waiting.computeIfAbsent(tm, x -> new ArrayList<>()).add(plan.labelOf.get(id));
            }
        });
        String reported = key + "|" + waiting.keySet();
        if (!waiting.isEmpty() && !reported.equals(waitingReported)) {
            waiting.forEach((tm, labels) -> LOG.warn("placement: job '{}': TaskManager {} is lost, and no section of {}"
                    + " moves all of its subtasks off it (no section for it, or several TaskManagers lost at once):"
                    + " {} subtask(s) keep it and wait for it ({}{})", plan.jobName, tm, plan.file, labels.size(),
                    labels.stream().limit(8).map(l -> "'" + l + "'").collect(Collectors.joining(", ")),
                    labels.size() > 8 ? ", ..." : ""));
        }
        waitingReported = reported;
        for (ExecutionVertexID id : vertices) {
            ExecutionSlotSharingGroup group = layout.groupOf.get(id);
            if (group != null) {
                bound.put(id, group);
            }
        }
    }

    @Override
    public ExecutionSlotSharingGroup getExecutionSlotSharingGroup(ExecutionVertexID executionVertexId) {
        return bound.get(executionVertexId);
    }

    @Override
    public Set<ExecutionSlotSharingGroup> getExecutionSlotSharingGroups() {
        return Collections.unmodifiableSet(current.groups);
    }

    @Override
    public void notifySchedulingTopologyUpdated(SchedulingTopology topology, List<ExecutionVertexID> newVertices) {
        for (ExecutionVertexID id : newVertices) {
            if (!planLayout.groupOf.containsKey(id)) {
                throw new PlacementSchedulerException("subtask " + id + " appeared after scheduling started: jobs whose"
                        + " graph changes at runtime (adaptive batch) cannot be placed by a schedulercfg");
            }
        }
    }
}
