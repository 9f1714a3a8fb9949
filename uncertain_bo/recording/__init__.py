"""Recording an explorer's run and replaying it, without ROS: the pieces the ROS side
(:mod:`uncertain_bo.ros.recording`, :mod:`uncertain_bo.ros.replay`) puts together.

- :mod:`~uncertain_bo.recording.contents`: what a recording holds besides the explorer's inputs and outputs (its
  cycle, its background decisions, its journal) and what ``metadata.yaml``'s ``custom_data`` says about the run;
- :mod:`~uncertain_bo.recording.definitions`: the message definitions stored with each topic;
- :mod:`~uncertain_bo.recording.bag_writer`: the rosbag2 folder (MCAP), written on a thread of its own;
- :mod:`~uncertain_bo.recording.live`: the same messages served live to Foxglove (foxglove-sdk);
- :mod:`~uncertain_bo.recording.decider`: background decisions recorded and replayed at the same cycle;
- :mod:`~uncertain_bo.recording.bag_reader`: a recording (MCAP or sqlite3) opened for replay, with one-line errors;
- :mod:`~uncertain_bo.recording.replay`: the replay's run folder (journal, comparison with the recorded journal);
- :mod:`~uncertain_bo.recording.layout`: the Foxglove layout shipped as ``config/foxglove_layout.json``.
"""
