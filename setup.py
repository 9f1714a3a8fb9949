"""ament_python package ``uncertain_bo``: the part colcon reads. Metadata, dependencies, extras and commands are in
pyproject.toml (``pip install .``); colcon's ament_python build runs this file and installs ``data_files``: the
package index marker, package.xml, launch/ and config/ under ``share/uncertain_bo``."""
from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'uncertain_bo'

setup(
    name=package_name,
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'launch'), glob('launch/*.launch.py')),
        (os.path.join('share', package_name, 'config'), glob('config/*.yaml') + glob('config/*.rviz')
         + glob('config/*.sdf') + glob('config/*.json')),
        (os.path.join('share', package_name, 'config', 'examples'), glob('config/examples/*.yaml')),
    ],
    zip_safe=True,
    license='Apache-2.0',
    python_requires='>=3.10',
)
